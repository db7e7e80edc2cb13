/** Keeps at most `cap` bytes of one output stream and remembers whether more came. */
export class OutputBuffer {
  readonly #cap: number;
  readonly #chunks: Buffer[] = [];
  #size = 0;
  truncated = false;

  constructor(cap: number) {
    this.#cap = cap;
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
  }

  text(): string {
    return Buffer.concat(this.#chunks).toString("utf8");
  }
}

/**
 * Watches one stream of a session shell for a command's end marker. Bytes before the
 * marker go to `sink`; the marker itself, the rest of its line and anything after it are
 * consumed. Holds back only the last `marker.length - 1` bytes in case a marker is split.
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
    const keep = Math.min(buffer.length, this.#marker.length - 1);
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
