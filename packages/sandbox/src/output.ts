/**
 * Keeps at most `cap` bytes of one output stream and remembers whether more came; `onKept`
 * is told each piece kept, as it comes (a throw is ignored: a live view never fails a command).
 */
export class OutputBuffer {
  readonly #cap: number;
  readonly #onKept: ((chunk: Buffer) => void) | undefined;
  readonly #chunks: Buffer[] = [];
  #size = 0;
  truncated = false;

  constructor(cap: number, onKept?: (chunk: Buffer) => void) {
    this.#cap = cap;
    this.#onKept = onKept;
  }

  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    const room = this.#cap - this.#size;
    if (room <= 0) {
      this.truncated = true;
      return;
    }
    const kept = chunk.length > room ? chunk.subarray(0, room) : chunk;
    if (kept.length < chunk.length) this.truncated = true;
    this.#chunks.push(Buffer.from(kept));
    this.#size += kept.length;
    try {
      this.#onKept?.(kept);
    } catch {
      // A listener's failure is its own.
    }
  }

  text(): string {
    return Buffer.concat(this.#chunks).toString("utf8");
  }
}

/**
 * Watches one stream of a session shell for a command's end marker. Bytes before the
 * marker go to `sink`; the marker itself, the rest of its line and anything after it are
 * consumed. Holds back only an end of the bytes that could be the start of a split marker
 * (at most `marker.length - 1` bytes), so output that cannot be part of one passes at once:
 * a live view of a command's output sees `first\n` while the command still runs.
 */
export class MarkerScanner {
  readonly #marker: Buffer;
  readonly #sink: (chunk: Buffer) => void;
  #held: Buffer = Buffer.alloc(0);
  #afterMarker: Buffer | undefined;
  /** The rest of the marker's line once the newline arrived (e.g. the exit code). */
  trailer: string | undefined;

  constructor(marker: string, sink: (chunk: Buffer) => void) {
    this.#marker = Buffer.from(marker);
    this.#sink = sink;
  }

  get done(): boolean {
    return this.trailer !== undefined;
  }

  push(chunk: Buffer): void {
    if (this.done) return;
    if (this.#afterMarker !== undefined) {
      this.#readTrailer(Buffer.concat([this.#afterMarker, chunk]));
      return;
    }
    const buffer = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk]);
    const at = buffer.indexOf(this.#marker);
    if (at >= 0) {
      this.#sink(buffer.subarray(0, at));
      this.#held = Buffer.alloc(0);
      this.#readTrailer(buffer.subarray(at + this.#marker.length));
      return;
    }
    const keep = markerStart(buffer, this.#marker);
    this.#sink(buffer.subarray(0, buffer.length - keep));
    this.#held = Buffer.from(buffer.subarray(buffer.length - keep));
  }

  /** Everything held back (used when the stream dies before the marker came). */
  flush(): void {
    if (this.#afterMarker === undefined && this.#held.length > 0) this.#sink(this.#held);
    this.#held = Buffer.alloc(0);
  }

  #readTrailer(rest: Buffer): void {
    const newline = rest.indexOf(10);
    if (newline < 0) {
      this.#afterMarker = Buffer.from(rest);
      return;
    }
    this.trailer = rest.subarray(0, newline).toString("utf8");
    this.#afterMarker = undefined;
  }
}

/** How many of `buffer`'s last bytes are the first bytes of `marker` (at most its length - 1). */
function markerStart(buffer: Buffer, marker: Buffer): number {
  for (let n = Math.min(buffer.length, marker.length - 1); n > 0; n--) {
    const from = buffer.length - n;
    if (buffer[from] === marker[0] && buffer.subarray(from).equals(marker.subarray(0, n))) return n;
  }
  return 0;
}
