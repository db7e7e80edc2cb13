import { DownloadError } from "./download-error.js";
import { type Head, LineReader } from "./http-answer-head.js";

/** How the body ends (RFC 9112 §6.3). */
type Framing =
  | { readonly kind: "length"; remaining: number }
  | {
      readonly kind: "chunked";
      state: "size" | "data" | "data-end" | "trailers" | "done";
      remaining: number;
      /** Bytes of the trailer section read so far, in whole lines (line ends count two). */
      trailerBytes: number;
    }
  | { readonly kind: "close" }
  | { readonly kind: "none" };

/** Where the next body bytes are in what arrived: see {@link BodyReader.step}. */
export interface BodyStep {
  /** Framing bytes at the start (chunk sizes, their line ends, trailers), not the body's. */
  readonly skip: number;
  /** Body bytes right after them. */
  readonly data: number;
}

/** A chunk's size line: hex digits, then optional extensions (ignored). */
const ChunkSizeLine = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/;

/**
 * Finds the body of an answer to a GET in the bytes after its head: a pure, incremental parser
 * of the framing (a length, chunked transfer coding, or up to the end of the connection) that
 * copies nothing. Its owner feeds it what arrived with {@link step}, which says which bytes
 * are framing and which are body, until {@link done}; when the connection ends first,
 * {@link ended} says whether that was the body's end. Everything it throws is a
 * {@link DownloadError}.
 */
export class BodyReader {
  /** The body's length when the answer said it (`content-length`, not chunked). */
  readonly length: number | undefined;
  readonly #framing: Framing;
  readonly #lines = new LineReader();
  readonly #maxLineBytes: number;

  /**
   * @param maxLineBytes the bound of any line of a chunked body (a size, a trailer), and of its
   *   whole trailer section, as of a head: `Defaults.download.maxHeadBytes`. Framing is not
   *   body, so no body limit counts it: without the section's bound, trailers could arrive
   *   without end.
   * @throws DownloadError (`protocol`) for a body this client cannot read: compressed, another
   *   transfer coding, a bad or conflicting `content-length`
   */
  constructor(head: Head, maxLineBytes: number) {
    this.#framing = framingOf(head);
    this.#maxLineBytes = maxLineBytes;
    this.length = this.#framing.kind === "length" ? this.#framing.remaining : undefined;
  }

  /** The body ended: nothing more is body (bytes after it are not read). */
  get done(): boolean {
    const framing = this.#framing;
    if (framing.kind === "length") return framing.remaining === 0;
    if (framing.kind === "chunked") return framing.state === "done";
    return framing.kind === "none";
  }

  /**
   * Reads `bytes` (what arrived, not empty; the body not {@link done}): `skip` bytes of framing,
   * then `data` bytes of body. The owner hands those over before it steps again, with the bytes
   * after them; `skip + data` is 0 only when the body is done.
   */
  step(bytes: Buffer): BodyStep {
    const framing = this.#framing;
    switch (framing.kind) {
      case "none":
        return { skip: 0, data: 0 };
      case "close":
        return { skip: 0, data: bytes.length };
      case "length": {
        const data = Math.min(framing.remaining, bytes.length);
        framing.remaining -= data;
        return { skip: 0, data };
      }
      case "chunked":
        return this.#chunked(framing, bytes);
    }
  }

  /** The connection ended before {@link done}: `undefined` when that ends the body, else why not. */
  ended(): DownloadError | undefined {
    const framing = this.#framing;
    if (framing.kind === "close" || framing.kind === "none") return undefined;
    if (framing.kind === "chunked" && framing.state === "data") {
      return new DownloadError("broken", "the connection closed inside a chunk");
    }
    return new DownloadError("broken", "the connection closed before the body's end");
  }

  #chunked(framing: Extract<Framing, { kind: "chunked" }>, bytes: Buffer): BodyStep {
    let skip = 0;
    while (skip < bytes.length && framing.state !== "done") {
      if (framing.state === "data") {
        const data = Math.min(framing.remaining, bytes.length - skip);
        framing.remaining -= data;
        if (framing.remaining === 0) framing.state = "data-end";
        return { skip, data };
      }
      const read =
        framing.state === "trailers"
          ? this.#lines.read(
              bytes.subarray(skip),
              this.#maxLineBytes - framing.trailerBytes,
              "trailers too large",
            )
          : this.#lines.read(bytes.subarray(skip), this.#maxLineBytes, "a line too long");
      skip += read.used;
      const line = read.line;
      if (line === undefined) continue;
      if (framing.state === "data-end") {
        if (line !== "") throw new DownloadError("protocol", "a chunk longer than it said");
        framing.state = "size";
      } else if (framing.state === "size") {
        const size = ChunkSizeLine.exec(line)?.[1];
        if (size === undefined) throw new DownloadError("protocol", "a bad chunk size");
        framing.remaining = Number.parseInt(size, 16);
        framing.state = framing.remaining === 0 ? "trailers" : "data";
      } else if (line === "") {
        framing.state = "done"; // the empty line after the last chunk's trailers
      } else {
        framing.trailerBytes += line.length + 2;
      }
    }
    return { skip, data: 0 };
  }
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
    // Chunked framing overrides a content-length (RFC 9112 §6.3); the connection is not reused.
    return { kind: "chunked", state: "size", remaining: 0, trailerBytes: 0 };
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
