import { isIP, connect as netConnect, type OnReadOpts, type Socket } from "node:net";
import { type ConnectionOptions, connect as tlsConnect } from "node:tls";
import { Defaults } from "../defaults.js";

/** The sizes and bounds of {@link httpDownload}. */
const DownloadDefaults = Defaults.download;

/** What {@link httpDownload} is asked for. */
export interface DownloadOptions {
  /** Ends the download at any point: the connection is closed, a wait rejects (`aborted`). */
  readonly signal: AbortSignal;
  /** How long the answer's head may take, from the connect on (each redirect anew). */
  readonly headersTimeoutMs: number;
  /**
   * How long the body may send nothing while the reader waits for it (`stalled`); the time
   * the reader spends with a chunk does not count. Absent: the body may take any time.
   */
  readonly stallTimeoutMs?: number | undefined;
  /**
   * Redirects (301, 302, 303, 307, 308 to http or https) followed; default
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
  /** The caller's signal aborted. */
  | "aborted";

/**
 * A failed download. The message names no URL (a Telegram file URL holds the bot token):
 * what failed, and the system's error code when there is one.
 */
export class DownloadError extends Error {
  override readonly name = "DownloadError";
  constructor(
    readonly failure: DownloadFailure,
    message: string,
    readonly code?: string | undefined,
  ) {
    super(code === undefined ? message : `${message} (${code})`);
  }
}

const Redirects = new Set([301, 302, 303, 307, 308]);
/** A header line's name (an RFC 9110 token) and value. */
const HeaderLine = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/;
const StatusLine = /^HTTP\/1\.[01] ([1-9]\d\d)(?: .*)?$/;
/** A chunk's size line: hex digits, then optional extensions (ignored). */
const ChunkSizeLine = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/;
/** What a request target may hold: printable ASCII without spaces (the URL encodes the rest). */
const RequestTarget = /^[\x21-\x7e]+$/;

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
 * views of, and the socket pauses while the ring is full. The ring grows only when TLS hands
 * over data it had already decrypted after the pause (it does not stop mid-record), which
 * the default sizes leave room for.
 *
 * Resolves once the head of the final answer arrived (any status: the caller decides what a
 * 404 means); rejects with a {@link DownloadError}. Proxies are not used (the global `fetch`
 * did not use them either).
 */
export async function httpDownload(url: URL, options: DownloadOptions): Promise<DownloadResponse> {
  const maxRedirects = options.maxRedirects ?? DownloadDefaults.maxRedirects;
  let target = url;
  for (let redirects = 0; ; redirects++) {
    const exchange = new Exchange(target, options);
    let head: Head;
    try {
      head = await exchange.head();
    } catch (error) {
      exchange.close();
      throw error;
    }
    const location = head.headers.get("location");
    if (!Redirects.has(head.status) || location === undefined) {
      try {
        return exchange.response(head);
      } catch (error) {
        exchange.close();
        throw error;
      }
    }
    exchange.close();
    if (redirects >= maxRedirects) {
      throw new DownloadError("redirects", `more than ${maxRedirects} redirects`);
    }
    let next: URL;
    try {
      next = new URL(location, target);
    } catch {
      throw new DownloadError("redirects", "a redirect to an address that is not one");
    }
    if (next.protocol !== "http:" && next.protocol !== "https:") {
      throw new DownloadError("redirects", "a redirect to an address that is not a web address");
    }
    target = next;
  }
}

interface Head {
  readonly status: number;
  readonly headers: Map<string, string>;
}

/** How the body ends (RFC 9112 §6.3). */
type Framing =
  | { readonly kind: "length"; remaining: number }
  | {
      readonly kind: "chunked";
      state: "size" | "data" | "data-end" | "trailers";
      remaining: number;
    }
  | { readonly kind: "close" }
  | { readonly kind: "none" };

/** One request and its answer on a connection of its own. */
class Exchange {
  readonly #options: DownloadOptions;
  readonly #socket: Socket;
  readonly #ring: Ring;
  #eof = false;
  #error: DownloadError | undefined;
  #wake: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The connection (and its TLS handshake) is up. */
  #connected = false;
  #closed = false;
  /** The last read left the ring too full for another: the socket stopped reading. */
  #paused = false;
  /** Bytes of a line being read (a head, a chunk size, a trailer) that spans reads. */
  #line = "";
  readonly #onAbort = () => this.#fail(new DownloadError("aborted", "the download was stopped"));

  constructor(url: URL, options: DownloadOptions) {
    this.#options = options;
    const target = `${url.pathname}${url.search}`;
    if (!RequestTarget.test(target) || !RequestTarget.test(url.host)) {
      throw new DownloadError("protocol", "the address cannot be requested");
    }
    const read = Buffer.allocUnsafe(DownloadDefaults.readBytes);
    this.#ring = new Ring(DownloadDefaults.ringBytes);
    const onread: OnReadOpts = {
      buffer: read,
      callback: (bytes: number): boolean => {
        this.#ring.push(read, bytes);
        this.#wakeUp();
        this.#paused = this.#ring.free < read.length;
        return !this.#paused;
      },
    };
    const secure = url.protocol === "https:";
    const host = url.hostname.replace(/^\[(.*)\]$/, "$1");
    const port = Number(url.port || (secure ? 443 : 80));
    // tls.connect takes `onread` as net.connect does (Node's tls docs); @types/node lacks it.
    const tlsOptions: ConnectionOptions & { onread: OnReadOpts } = {
      host,
      port,
      onread,
      ALPNProtocols: ["http/1.1"],
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    };
    this.#socket = secure ? tlsConnect(tlsOptions) : netConnect({ host, port, onread });
    this.#socket.once(secure ? "secureConnect" : "connect", () => {
      this.#connected = true;
    });
    this.#socket.on("error", (error: NodeJS.ErrnoException) => {
      const code = typeof error.code === "string" ? error.code : undefined;
      this.#fail(
        this.#connected
          ? new DownloadError("broken", "the connection failed", code)
          : new DownloadError("unreachable", "could not connect", code),
      );
    });
    this.#socket.on("end", () => {
      this.#eof = true;
      this.#wakeUp();
    });
    this.#socket.on("close", () => {
      if (!this.#eof) this.#fail(new DownloadError("broken", "the connection closed"));
    });
    this.#socket.write(
      `GET ${target} HTTP/1.1\r\nHost: ${url.host}\r\nUser-Agent: mediagate\r\nAccept: */*\r\nAccept-Encoding: identity\r\nConnection: close\r\n\r\n`,
    );
    if (options.signal.aborted) this.#onAbort();
    else options.signal.addEventListener("abort", this.#onAbort, { once: true });
    this.#arm(options.headersTimeoutMs, () => {
      return new DownloadError("timeout", `no answer within ${shown(options.headersTimeoutMs)}`);
    });
  }

  /** Reads the answer's head, skipping interim (1xx) answers. */
  async head(): Promise<Head> {
    for (;;) {
      const lines: string[] = [];
      let size = 0;
      for (;;) {
        const line = await this.#readLine(DownloadDefaults.maxHeadBytes - size, "head");
        if (line === undefined) {
          throw lines.length === 0 && size === 0
            ? new DownloadError("broken", "the connection closed before an answer")
            : new DownloadError("protocol", "the connection closed inside the answer's head");
        }
        size += line.length + 2;
        if (line === "") break;
        lines.push(line);
      }
      const head = parseHead(lines);
      if (head.status >= 200) {
        clearTimeout(this.#timer);
        return head;
      }
      if (head.status === 101) throw new DownloadError("protocol", "an unasked protocol switch");
    }
  }

  response(head: Head): DownloadResponse {
    const framing = framingOf(head);
    const exchange = this;
    return {
      status: head.status,
      headers: head.headers,
      length: framing.kind === "length" ? framing.remaining : undefined,
      body: {
        async *[Symbol.asyncIterator]() {
          try {
            for (;;) {
              const chunk = await exchange.#bodyChunk(framing);
              if (chunk === undefined) return;
              yield chunk;
            }
          } finally {
            exchange.close();
          }
        },
      },
      close: () => this.close(),
    };
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#options.signal.removeEventListener("abort", this.#onAbort);
    this.#socket.destroy();
  }

  /** The next piece of the body (releasing the one before), or `undefined` at its end. */
  async #bodyChunk(framing: Framing): Promise<Uint8Array | undefined> {
    this.#ring.release();
    this.#resumeIfRoom();
    switch (framing.kind) {
      case "none":
        return undefined;
      case "close":
        return (await this.#more("body")) ? this.#ring.take(Number.POSITIVE_INFINITY) : undefined;
      case "length": {
        if (framing.remaining === 0) return undefined;
        if (!(await this.#more("body"))) {
          throw new DownloadError("broken", "the connection closed before the body's end");
        }
        const chunk = this.#ring.take(framing.remaining);
        framing.remaining -= chunk.length;
        return chunk;
      }
      case "chunked":
        return this.#chunkedPiece(framing);
    }
  }

  async #chunkedPiece(
    framing: Extract<Framing, { kind: "chunked" }>,
  ): Promise<Uint8Array | undefined> {
    for (;;) {
      if (framing.state === "data") {
        if (!(await this.#more("body"))) {
          throw new DownloadError("broken", "the connection closed inside a chunk");
        }
        const chunk = this.#ring.take(framing.remaining);
        framing.remaining -= chunk.length;
        if (framing.remaining === 0) framing.state = "data-end";
        return chunk;
      }
      const line = await this.#readLine(DownloadDefaults.maxHeadBytes, "body");
      if (line === undefined) {
        throw new DownloadError("broken", "the connection closed before the body's end");
      }
      if (framing.state === "data-end") {
        if (line !== "") throw new DownloadError("protocol", "a chunk longer than it said");
        framing.state = "size";
      } else if (framing.state === "size") {
        const size = ChunkSizeLine.exec(line)?.[1];
        if (size === undefined) throw new DownloadError("protocol", "a bad chunk size");
        framing.remaining = Number.parseInt(size, 16);
        framing.state = framing.remaining === 0 ? "trailers" : "data";
      } else if (line === "") {
        return undefined; // the empty line after the last chunk's trailers
      }
    }
  }

  /**
   * One line (up to LF, without CR LF) of at most `max` bytes, or `undefined` when the
   * connection ended first. Latin-1: header bytes are not UTF-8 by rule.
   */
  async #readLine(max: number, phase: "head" | "body"): Promise<string | undefined> {
    for (;;) {
      if (!(await this.#more(phase))) return undefined;
      const view = this.#ring.peek();
      const lf = view.indexOf(10);
      const end = lf < 0 ? view.length : lf;
      if (this.#line.length + end > max) {
        throw new DownloadError(
          "protocol",
          phase === "head" ? "a head too large" : "a line too long",
        );
      }
      this.#line += view.toString("latin1", 0, end);
      this.#ring.skip(lf < 0 ? end : end + 1);
      if (lf >= 0) {
        const line = this.#line.endsWith("\r") ? this.#line.slice(0, -1) : this.#line;
        this.#line = "";
        return line;
      }
    }
  }

  /** Waits until the ring holds bytes (`true`) or the connection ended (`false`). */
  async #more(phase: "head" | "body"): Promise<boolean> {
    const stallMs = this.#options.stallTimeoutMs;
    // Stopped: at once, whatever is still in the ring.
    if (this.#error?.failure === "aborted") throw this.#error;
    while (this.#ring.pending === 0) {
      if (this.#error !== undefined) throw this.#error;
      if (this.#closed) throw new DownloadError("aborted", "the download was closed");
      if (this.#eof) return false;
      this.#resumeIfRoom();
      if (phase === "body" && stallMs !== undefined) {
        this.#arm(
          stallMs,
          () => new DownloadError("stalled", `nothing arrived for ${shown(stallMs)}`),
        );
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      if (phase === "body") clearTimeout(this.#timer);
    }
    return true;
  }

  /** Reads on once the ring has room for a whole read again. */
  #resumeIfRoom(): void {
    if (!this.#paused || this.#ring.free < DownloadDefaults.readBytes) return;
    this.#paused = false;
    if (!this.#socket.destroyed) this.#socket.resume();
  }

  #arm(ms: number, error: () => DownloadError): void {
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#fail(error()), ms);
  }

  #fail(error: DownloadError): void {
    if (this.#error !== undefined || this.#closed) return;
    this.#error = error;
    clearTimeout(this.#timer);
    this.#socket.destroy();
    this.#wakeUp();
  }

  #wakeUp(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

/** A wait as a message shows it: `300 ms`, `15 s`. */
function shown(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`;
}

/** The status line and headers of an answer. */
function parseHead(lines: readonly string[]): Head {
  const status = StatusLine.exec(lines[0] ?? "")?.[1];
  if (status === undefined) throw new DownloadError("protocol", "not an HTTP/1.1 answer");
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const match = HeaderLine.exec(line);
    if (match === null) throw new DownloadError("protocol", "a bad header line");
    const name = (match[1] as string).toLowerCase();
    const value = match[2] as string;
    const before = headers.get(name);
    headers.set(name, before === undefined ? value : `${before}, ${value}`);
  }
  return { status: Number(status), headers };
}

/** How the body of an answer to a GET ends; an encoding this client does not undo is refused. */
function framingOf(head: Head): Framing {
  if (head.status === 204 || head.status === 304) return { kind: "none" };
  const encoding = head.headers.get("content-encoding")?.toLowerCase();
  if (encoding !== undefined && encoding !== "identity" && head.status < 300) {
    throw new DownloadError("protocol", `a compressed body (${encoding.slice(0, 40)})`);
  }
  const transfer = head.headers.get("transfer-encoding");
  if (transfer !== undefined) {
    if (transfer.toLowerCase() !== "chunked") {
      throw new DownloadError(
        "protocol",
        `a transfer encoding it does not read (${transfer.slice(0, 40)})`,
      );
    }
    return { kind: "chunked", state: "size", remaining: 0 };
  }
  const length = head.headers.get("content-length");
  if (length === undefined) return { kind: "close" };
  const values = new Set(length.split(",").map((value) => value.trim()));
  const [only] = values;
  if (values.size !== 1 || only === undefined || !/^\d{1,15}$/.test(only)) {
    throw new DownloadError("protocol", "a bad content-length");
  }
  return { kind: "length", remaining: Number(only) };
}

/**
 * The bytes read and not yet handed over, in one buffer used round and round (exported for
 * its test). The reader
 * holds at most one piece at a time (from {@link take} until {@link release}); its bytes are
 * not written over while it holds them. Positions count bytes since the start; a position's
 * place in the buffer is the position modulo its size.
 */
export class Ring {
  #buffer: Buffer;
  #read = 0;
  #written = 0;
  /** Where the piece the reader holds starts; `undefined` when it holds none. */
  #held: number | undefined;

  constructor(size: number) {
    this.#buffer = Buffer.allocUnsafe(size);
  }

  get pending(): number {
    return this.#written - this.#read;
  }

  /** Bytes that can be written without touching pending or held bytes. */
  get free(): number {
    return this.#buffer.length - (this.#written - (this.#held ?? this.#read));
  }

  /**
   * Appends `bytes` of `from`. When they do not fit (TLS went on after the socket paused), a
   * larger buffer takes the pending bytes; the piece the reader holds stays in the old one.
   */
  push(from: Buffer, bytes: number): void {
    if (bytes > this.free) {
      const old = this.#buffer;
      const pending = this.pending;
      this.#buffer = Buffer.allocUnsafe(Math.max(2 * old.length, pending + bytes));
      this.#copyOut(old, this.#read, pending, this.#buffer);
      this.#read = 0;
      this.#written = pending;
      this.#held = undefined;
    }
    const size = this.#buffer.length;
    const at = this.#written % size;
    const first = Math.min(bytes, size - at);
    from.copy(this.#buffer, at, 0, first);
    if (first < bytes) from.copy(this.#buffer, 0, first, bytes);
    this.#written += bytes;
  }

  /** The pending bytes up to the buffer's end, not consumed. */
  peek(): Buffer {
    const size = this.#buffer.length;
    const at = this.#read % size;
    return this.#buffer.subarray(at, at + Math.min(this.pending, size - at));
  }

  /** Consumes `bytes` (at most what {@link peek} showed) that are not handed over. */
  skip(bytes: number): void {
    this.#read += bytes;
  }

  /** Hands over up to `max` pending bytes (one contiguous piece), held until {@link release}. */
  take(max: number): Buffer {
    const view = this.peek();
    const piece = view.length > max ? view.subarray(0, max) : view;
    this.#held ??= this.#read;
    this.#read += piece.length;
    return piece;
  }

  /** The reader is done with what it took. */
  release(): void {
    this.#held = undefined;
    if (this.pending === 0) {
      this.#read = 0;
      this.#written = 0;
    }
  }

  #copyOut(from: Buffer, position: number, bytes: number, to: Buffer): void {
    const at = position % from.length;
    const first = Math.min(bytes, from.length - at);
    from.copy(to, 0, at, at + first);
    if (first < bytes) from.copy(to, first, 0, bytes - first);
  }
}
