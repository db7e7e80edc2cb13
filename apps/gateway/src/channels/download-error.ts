import { MediagateError } from "@mediagate/io";

/** Why a download failed. */
export type DownloadFailure =
  /** No connection: DNS, refused, TLS (`code` says which). */
  | "unreachable"
  /** The head did not arrive within `headersTimeoutMs`. */
  | "timeout"
  /** The body sent nothing for `stallTimeoutMs` while it was waited for. */
  | "stalled"
  /** The connection failed or closed before the body's end. */
  | "broken"
  /** The answer is not HTTP/1.1 this client reads (a bad head, chunk or encoding). */
  | "protocol"
  /** More than `maxRedirects` redirects, or one to a non-web address. */
  | "redirects"
  /**
   * Not one of the platform's file hosts (the address, or a redirect's), or such a host on an
   * address that is not public (`DownloadHosts`): nothing was sent to it.
   */
  | "refused"
  /** The caller's signal aborted. */
  | "aborted";

/**
 * A failed download. The message names no URL (a Telegram file URL holds the bot token):
 * what failed, and the system's error code (`systemCode`, e.g. `ECONNREFUSED`) when there is one.
 */
export class DownloadError extends MediagateError {
  override readonly name = "DownloadError";
  readonly code = "MG_DOWNLOAD_FAILED";
  constructor(
    readonly failure: DownloadFailure,
    message: string,
    readonly systemCode?: string | undefined,
  ) {
    super(systemCode === undefined ? message : `${message} (${systemCode})`);
  }
}
