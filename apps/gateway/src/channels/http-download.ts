import { Defaults } from "../defaults.js";
import { DownloadError } from "./download-error.js";
import type { DownloadHosts } from "./download-hosts.js";
import type { Head } from "./http-answer-head.js";
import { Exchange, type ExchangeBody } from "./http-exchange.js";

export type { DownloadFailure } from "./download-error.js";
export { DownloadError } from "./download-error.js";
export type { ResolveHost } from "./download-hosts.js";
export { DownloadHosts } from "./download-hosts.js";

/** The sizes and bounds of {@link httpDownload}. */
const DownloadDefaults = Defaults.download;

/** What {@link httpDownload} is asked for. */
export interface DownloadOptions {
  /** Ends the download at any point: the connection is closed, a wait rejects (`aborted`). */
  readonly signal: AbortSignal;
  /**
   * The only hosts the download and its redirects may go to, and the addresses they may be
   * on; anything else is refused before a connection (`refused`).
   */
  readonly hosts: DownloadHosts;
  /** How long the answer's head may take, from the connect on (each redirect anew). */
  readonly headersTimeoutMs: number;
  /**
   * How long the body may send nothing while the reader waits for it (`stalled`); the time
   * the reader spends with a chunk does not count. Absent: the body may take any time.
   */
  readonly stallTimeoutMs?: number | undefined;
  /**
   * Redirects (301, 302, 303, 307, 308 to http or https, on `hosts`) followed; default
   * `Defaults.download.maxRedirects`.
   */
  readonly maxRedirects?: number | undefined;
  /** The certificates TLS trusts instead of Node's own (a test server's); default Node's. */
  readonly ca?: string | Buffer | undefined;
}

/** An answer whose head arrived; its body is read from {@link DownloadResponse.body}. */
export interface DownloadResponse {
  readonly status: number;
  /** Header names in lower case; a repeated header's values joined with `, `. */
  readonly headers: ReadonlyMap<string, string>;
  /** The body's length when the answer said it (`content-length`, not chunked). */
  readonly length: number | undefined;
  /**
   * The body's bytes as they arrive, read once. Every chunk is a view into memory this
   * download reuses: it is valid until the next chunk is asked for (copy it to keep it).
   * Ending the iteration early closes the connection.
   */
  readonly body: AsyncIterable<Uint8Array>;
  /** Closes the connection; the body is not read (safe to call more than once). */
  close(): void;
}

const Redirects = new Set([301, 302, 303, 307, 308]);

/**
 * Downloads `url` with a plain HTTP/1.1 GET over one `node:net` / `node:tls` connection
 * (`Connection: close`, `Accept-Encoding: identity`), following redirects, and hands the body
 * over as views into memory it reuses, so a file of any size leaves no garbage behind.
 *
 * Why not `fetch` (undici) or `node:http`: both read every socket read into a new buffer (and
 * `fetch` copies each chunk once more); V8 frees such buffers only at its next full
 * collection, which it puts off until tens of MB of them pile up. The first large file a
 * gateway received grew its RSS by 32–35 MB that way (`bench/README.md`, "Inbound files through
 * the whole gateway"). Here the socket reads into one fixed buffer (Node's `onread` option,
 * which neither client exposes), each read is copied into a ring the reader's chunks are
 * views of (`ByteRing` of `@mediagate/io`), and the socket pauses while the ring is full. The ring grows only when TLS hands
 * over data it had already decrypted after the pause (it does not stop mid-record), which
 * the default sizes leave room for.
 *
 * Only `options.hosts` are asked, the first request and every redirect alike, each connected
 * through the lookup that admitted it: the address connected to is the one checked
 * ({@link DownloadHosts}).
 *
 * Resolves once the head of the final answer arrived (any status: the caller decides what a
 * 404 means); rejects with a {@link DownloadError}. Proxies are not used (the global `fetch`
 * did not use them either).
 *
 * The request and where it goes (redirects) are decided here; one request's connection and
 * waits are an {@link Exchange} (`http-exchange.ts`); what the answer's bytes mean is read by
 * the pure parsers in `http-answer-head.ts` and `http-answer-body.ts`.
 */
export async function httpDownload(url: URL, options: DownloadOptions): Promise<DownloadResponse> {
  const maxRedirects = options.maxRedirects ?? DownloadDefaults.maxRedirects;
  let target = url;
  for (let redirects = 0; ; redirects++) {
    const lookup = options.hosts.admit(target, redirects > 0);
    const exchange = new Exchange(target, { ...options, lookup });
    let head: Head;
    try {
      head = await exchange.head();
    } catch (error) {
      exchange.close();
      throw error;
    }
    const location = head.headers.get("location");
    if (!Redirects.has(head.status) || location === undefined) return responseOf(exchange, head);
    exchange.close();
    if (redirects >= maxRedirects) {
      throw new DownloadError("redirects", `more than ${maxRedirects} redirects`);
    }
    target = redirectTarget(location, target);
  }
}

/** Where a redirect's `location` leads from `from`; only a web address is followed. */
function redirectTarget(location: string, from: URL): URL {
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    throw new DownloadError("redirects", "a redirect to an address that is not one");
  }
  if (next.protocol !== "http:" && next.protocol !== "https:") {
    throw new DownloadError("redirects", "a redirect to an address that is not a web address");
  }
  return next;
}

/** The final answer as the caller gets it; a body this client cannot read closes the exchange. */
function responseOf(exchange: Exchange, head: Head): DownloadResponse {
  let body: ExchangeBody;
  try {
    body = exchange.body(head);
  } catch (error) {
    exchange.close();
    throw error;
  }
  return {
    status: head.status,
    headers: head.headers,
    length: body.length,
    body: body.chunks,
    close: () => exchange.close(),
  };
}
