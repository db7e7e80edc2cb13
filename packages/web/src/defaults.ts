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
  /**
   * A request whose headers and body have not all arrived this long after it began is answered
   * 408 and its connection closed: the console's requests are small JSON bodies, and without a
   * bound a client sending a byte now and then (slowloris) holds a connection, and the
   * gateway's file descriptors, for ever. An event stream is a response, not bounded by it.
   */
  requestTimeoutMs: 30_000,
  /** A comment line on idle event streams, so proxies keep them open. */
  heartbeatMs: 15_000,
  /**
   * Event streams one login session keeps open at once (a browser's tabs); one more closes its
   * oldest. With `maxSessions`, at most 512 streams are written to each second.
   */
  eventStreamsPerLogin: 8,
  /**
   * An event stream whose client has left this many bytes unread (a laptop asleep with its
   * connection open, a client that never reads) is closed: each update is queued for it in
   * the gateway's memory until it reads, without bound. A browser that wakes reconnects.
   */
  eventStreamBacklogBytes: 1024 * 1024,
  /** Largest file shown inline (images, audio, video); bigger ones are offered for download. */
  previewMaxBytes: 50 * 1024 * 1024,
  /** How much of a text file the deliveries page shows. */
  textHeadBytes: 4 * 1024,
  /** Replies the deliveries page lists. */
  deliveries: 50,
  /** UTC days the Usage page charts, today included. */
  usageDays: 30,
  /** Log lines one request answers at most. */
  logLimit: 500,
  /** Wrong tokens in a row from one address after which its logins wait (docs/web-console.md). */
  loginFailuresBeforeWait: 5,
  /** The first wait; each further wrong token doubles it. */
  loginFirstWaitMs: 1_000,
  /** The longest wait. */
  loginMaxWaitMs: 15 * 60 * 1000,
  /** An address's wrong tokens are forgotten this long after its last one (or its wait's end). */
  loginForgetMs: 60 * 60 * 1000,
  /**
   * Addresses whose wrong tokens are remembered at once (about 250 bytes each); the one with the
   * oldest wrong token is forgotten first, so a flood from many addresses cannot grow memory.
   */
  loginMaxAddresses: 10_000,
  /** Refused requests are logged as one summary line per this period, never one line each. */
  refusalSummaryMs: 60_000,
  /** Addresses a summary counts one by one (the rest are counted together). */
  refusalMaxAddresses: 10_000,
  /** Addresses a summary names, the most refused first. */
  refusalTopAddresses: 5,
  /** Names of the cookies. */
  sessionCookie: "mg_session",
  csrfCookie: "mg_csrf",
} as const;
