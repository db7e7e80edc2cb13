/** Every default of @mediagate/web, each written once (docs/web-console.md). */
export const WebDefaults = {
  /** A login session unused this long ends (the browser logs in again). */
  sessionIdleMs: 12 * 60 * 60 * 1000,
  /** A login session ends this long after the login, used or not. */
  sessionMaxMs: 7 * 24 * 60 * 60 * 1000,
  /** Login sessions kept at once; the oldest ends when one more logs in. */
  maxSessions: 64,
  /** How often live updates are computed while at least one browser watches. */
  liveIntervalMs: 1_000,
  /** A comment line on idle event streams, so proxies keep them open. */
  heartbeatMs: 15_000,
  /** Largest file shown inline (images, audio, video); bigger ones are offered for download. */
  previewMaxBytes: 50 * 1024 * 1024,
  /** How much of a text file the deliveries page shows. */
  textHeadBytes: 4 * 1024,
  /** Replies the deliveries page lists. */
  deliveries: 50,
  /** Log lines one request answers at most. */
  logLimit: 500,
  /** Names of the cookies. */
  sessionCookie: "mg_session",
  csrfCookie: "mg_csrf",
} as const;
