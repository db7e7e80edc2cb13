import {
  isIP,
  type LookupFunction,
  connect as netConnect,
  type OnReadOpts,
  type Socket,
} from "node:net";
import { type ConnectionOptions, connect as tlsConnect } from "node:tls";
import { ByteRing } from "@mediagate/io";
import { Defaults } from "../defaults.js";
import { DownloadError } from "./download-error.js";
import { BodyReader } from "./http-answer-body.js";
import { type Head, HeadReader } from "./http-answer-head.js";

/** The sizes and bounds of an exchange. */
const DownloadDefaults = Defaults.download;

/** What an {@link Exchange} needs of the download's options. */
export interface ExchangeOptions {
  readonly signal: AbortSignal;
  readonly headersTimeoutMs: number;
  readonly stallTimeoutMs?: number | undefined;
  readonly ca?: string | Buffer | undefined;
  /** Resolves the host name (not called for an address literal); a refusal it gives is kept. */
  readonly lookup?: LookupFunction | undefined;
}

/** The body of an answer as an {@link Exchange} hands it over. */
export interface ExchangeBody {
  /** The body's length when the answer said it (`content-length`, not chunked). */
  readonly length: number | undefined;
  /** Views into the exchange's ring, each valid until the next is asked for. */
  readonly chunks: AsyncIterable<Uint8Array>;
}

/** What a request target may hold: printable ASCII without spaces (the URL encodes the rest). */
const RequestTarget = /^[\x21-\x7e]+$/;

/**
 * One GET and its answer on a connection of its own: the socket, the ring its reads are copied
 * into, the waits (the head's timeout, the body's stall timeout, the caller's signal). What
 * the bytes mean is the parsers' business ({@link HeadReader}, {@link BodyReader}); where to go
 * next is `httpDownload`'s.
 */
export class Exchange {
  readonly #options: ExchangeOptions;
  readonly #socket: Socket;
  readonly #ring: ByteRing;
  #eof = false;
  #error: DownloadError | undefined;
  #wake: (() => void) | undefined;
  #timer: NodeJS.Timeout | undefined;
  /** The connection (and its TLS handshake) is up. */
  #connected = false;
  #closed = false;
  /** The last read left the ring too full for another: the socket stopped reading. */
  #paused = false;
  readonly #onAbort = () => this.#fail(new DownloadError("aborted", "the download was stopped"));

  /** Connects to `url` and sends the request; the answer is read with {@link head}. */
  constructor(url: URL, options: ExchangeOptions) {
    this.#options = options;
    const target = `${url.pathname}${url.search}`;
    if (!RequestTarget.test(target) || !RequestTarget.test(url.host)) {
      throw new DownloadError("protocol", "the address cannot be requested");
    }
    const read = Buffer.allocUnsafe(DownloadDefaults.readBytes);
    this.#ring = new ByteRing(DownloadDefaults.ringBytes);
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
    const lookup = options.lookup === undefined ? {} : { lookup: options.lookup };
    const tlsOptions: ConnectionOptions & { onread: OnReadOpts } = {
      host,
      port,
      onread,
      ...lookup,
      ALPNProtocols: ["http/1.1"],
      ...(isIP(host) === 0 ? { servername: host } : {}),
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    };
    this.#socket = secure ? tlsConnect(tlsOptions) : netConnect({ host, port, onread, ...lookup });
    this.#socket.once(secure ? "secureConnect" : "connect", () => {
      this.#connected = true;
    });
    this.#socket.on("error", (error: NodeJS.ErrnoException) => {
      if (error instanceof DownloadError) return this.#fail(error);
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

  /** Reads the final answer's head, skipping interim (1xx) answers. */
  async head(): Promise<Head> {
    const reader = new HeadReader(DownloadDefaults.maxHeadBytes);
    for (;;) {
      if (!(await this.#more("head"))) throw reader.ended();
      const { used, head } = reader.push(this.#ring.peek());
      this.#ring.skip(used);
      if (head !== undefined) {
        clearTimeout(this.#timer);
        return head;
      }
    }
  }

  /**
   * The body that follows `head`, read once; ending the iteration closes the connection.
   * @throws DownloadError (`protocol`) for a body this client cannot read ({@link BodyReader})
   */
  body(head: Head): ExchangeBody {
    const reader = new BodyReader(head, DownloadDefaults.maxHeadBytes);
    const exchange = this;
    return {
      length: reader.length,
      chunks: {
        async *[Symbol.asyncIterator]() {
          try {
            for (;;) {
              const chunk = await exchange.#bodyChunk(reader);
              if (chunk === undefined) return;
              yield chunk;
            }
          } finally {
            exchange.close();
          }
        },
      },
    };
  }

  /** Closes the connection (safe to call more than once). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#options.signal.removeEventListener("abort", this.#onAbort);
    this.#socket.destroy();
  }

  /** The next piece of the body (releasing the one before), or `undefined` at its end. */
  async #bodyChunk(reader: BodyReader): Promise<Uint8Array | undefined> {
    this.#ring.release();
    this.#resumeIfRoom();
    for (;;) {
      if (reader.done) return undefined;
      if (!(await this.#more("body"))) {
        const error = reader.ended();
        if (error !== undefined) throw error;
        return undefined;
      }
      const { skip, data } = reader.step(this.#ring.peek());
      this.#ring.skip(skip);
      if (data > 0) return this.#ring.take(data);
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
