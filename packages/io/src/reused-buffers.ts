/**
 * Memory reused across reads, so that a file or a download of any size leaves no garbage
 * behind. Node's file streams, `node:http` and `fetch` read every read into a new buffer, and V8
 * frees such buffers only at its next full collection, which it puts off until tens of MB of
 * them have piled up; the allocator then keeps the freed pages. Measured with 45 MiB files
 * (`bench/README.md`): reading a spooled file with a file stream grew the gateway's RSS by
 * 34 MB, into one reused buffer by 0.5 MB ("Inbox"); its upload through the archive API by
 * 22–38 MB, into four reused buffers by about 6 MB ("Inbox"); a reply's file uploaded to
 * Telegram by 31.4 MB, into four reused buffers by 0.7–1.2 MB (the results table); a download
 * by 32–35 MB with `fetch`, by 0–0.5 MB through {@link ByteRing} ("Inbound files through the
 * whole gateway").
 *
 * Two shapes, because the readers differ in where a read lands: {@link BufferRing} when each
 * read goes into a buffer of the reader's choosing (a file handle's `read`); {@link ByteRing}
 * when reads arrive in a buffer the reader does not choose and that the next read overwrites
 * (a socket's `onread`), so they must be copied out, and the consumer needs the bytes
 * contiguous across reads (an HTTP head's lines span them).
 */

/** The shape of a {@link BufferRing}. */
export interface BufferRingOptions {
  /**
   * How many buffers take turns. A buffer handed out is not handed out again before this many
   * more were asked for, nor before its hold ({@link BufferRing.holdUntil}) settled.
   */
  readonly buffers: number;
  /** The largest buffer, and so the largest read into one. */
  readonly bufferBytes: number;
}

/** One buffer of a {@link BufferRing}: made when first needed, and what it waits for. */
interface Slot {
  buffer: Buffer | undefined;
  hold: Promise<unknown> | undefined;
}

/**
 * A few buffers handed out in turn, each made when it is first needed and no larger than asked
 * for (a 3 KB photo takes one 3 KB buffer, not a ring of large ones). Each one is the caller's
 * until it comes round again: with `buffers: 1`, until the next is asked for; with more, the
 * caller may keep that many in flight (writes not yet flushed). A caller that knows when it is
 * done with one says so with {@link holdUntil}, and the ring then waits for that before handing
 * the buffer out again: the ring is also the caller's backpressure.
 *
 * Buffers are allocated outside Node's shared pool (`allocUnsafeSlow`): a pooled slice would keep
 * its whole 8 KiB pool alive, and a buffer's `byteLength` is then exactly what it holds.
 */
export class BufferRing {
  readonly #bufferBytes: number;
  readonly #slots: Slot[];
  /** The slot handed out last; -1 before the first. */
  #turn = -1;

  constructor(options: BufferRingOptions) {
    const { buffers, bufferBytes } = options;
    if (!Number.isSafeInteger(buffers) || buffers < 1) {
      throw new RangeError(`a BufferRing needs 1 buffer or more (buffers: ${buffers})`);
    }
    if (!Number.isSafeInteger(bufferBytes) || bufferBytes < 1) {
      throw new RangeError(
        `a BufferRing needs buffers of 1 byte or more (bufferBytes: ${bufferBytes})`,
      );
    }
    this.#bufferBytes = bufferBytes;
    this.#slots = Array.from({ length: buffers }, () => ({ buffer: undefined, hold: undefined }));
  }

  /**
   * The next buffer in turn, once its hold (if any) settled; a hold that rejected rejects this
   * call instead. It is at least `min(bytes, bufferBytes)` long (`bytes` defaults to
   * `bufferBytes`): a slot keeps the buffer it made first unless a later call needs more. Ask
   * for one buffer at a time (await each call before the next).
   */
  async next(bytes: number = this.#bufferBytes): Promise<Buffer> {
    this.#turn = (this.#turn + 1) % this.#slots.length;
    const slot = this.#slots[this.#turn] as Slot;
    const hold = slot.hold;
    slot.hold = undefined;
    if (hold !== undefined) await hold;
    const want = Math.min(bytes, this.#bufferBytes);
    if (slot.buffer === undefined || slot.buffer.length < want) {
      slot.buffer = Buffer.allocUnsafeSlow(want);
    }
    return slot.buffer;
  }

  /**
   * Keeps the buffer {@link next} handed out last from being handed out again until `done`
   * settles (a write's callback). A rejection is not reported here: the {@link next} that would
   * reuse the buffer, or {@link settled}, rejects with it.
   */
  holdUntil(done: Promise<unknown>): void {
    const slot = this.#slots[this.#turn];
    if (slot === undefined) throw new Error("holdUntil before any buffer was handed out");
    done.catch(() => undefined);
    slot.hold = done;
  }

  /** Settles once every hold has; rejects with the first that rejected. */
  async settled(): Promise<void> {
    await Promise.all(this.#slots.map((slot) => slot.hold));
  }
}

/** What {@link readChunks} reads from: a file handle, or anything with its positional `read`. */
export interface ChunkSource {
  read(
    buffer: Buffer,
    offset: number,
    length: number,
    position: number | null,
  ): Promise<{ bytesRead: number }>;
}

/** What {@link readChunks} reads, and into what. */
export interface ReadChunksOptions {
  /** The buffers the reads go into; each chunk is a view of one. */
  readonly ring: BufferRing;
  /**
   * Where the first read starts. Absent: at the file's own position, read on in order (what a
   * pipe needs, or a file opened for this read alone).
   */
  readonly start?: number | undefined;
  /** The most bytes read; absent, up to the end of the file. Buffers are sized to what is left. */
  readonly size?: number | undefined;
  /** Stops the reading before the next read (with the signal's reason). */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The bytes of `source` in order, each chunk a view of the next buffer of `options.ring`. It ends
 * at `size` bytes or at the end of the file, whichever comes first (a caller that needs all
 * `size` bytes counts them). The source is not closed.
 */
export async function* readChunks(
  source: ChunkSource,
  options: ReadChunksOptions,
): AsyncGenerator<Buffer, void, undefined> {
  const { ring, start, signal } = options;
  const size = options.size ?? Number.POSITIVE_INFINITY;
  for (let read = 0; read < size; ) {
    signal?.throwIfAborted();
    const left = size - read;
    const buffer = await ring.next(left);
    const length = Math.min(buffer.length, left);
    const position = start === undefined ? null : start + read;
    const { bytesRead } = await source.read(buffer, 0, length, position);
    if (bytesRead === 0) return;
    read += bytesRead;
    yield buffer.subarray(0, bytesRead);
  }
}

/**
 * The bytes read and not yet handed over, in one buffer used round and round: for reads that
 * arrive in memory the reader does not choose (a socket's `onread` buffer, overwritten by the
 * next read), which are copied in with {@link push}, and a consumer that reads lines across
 * reads ({@link peek}, {@link skip}) as well as pieces it holds ({@link take}). The reader holds
 * at most one piece at a time (from {@link take} until {@link release}); its bytes are not
 * written over while it holds them. Positions count bytes since the start; a position's place in
 * the buffer is the position modulo its size.
 *
 * The writer is expected to stop while {@link free} is less than a read; the buffer grows only
 * when it cannot (TLS hands over data it had already decrypted after the socket paused: it does
 * not stop mid-record), which the download's default sizes leave room for.
 */
export class ByteRing {
  #buffer: Buffer;
  #read = 0;
  #written = 0;
  /** Where the piece the reader holds starts; `undefined` when it holds none. */
  #held: number | undefined;

  constructor(size: number) {
    if (!Number.isSafeInteger(size) || size < 1) {
      throw new RangeError(`a ByteRing needs 1 byte or more (size: ${size})`);
    }
    this.#buffer = Buffer.allocUnsafe(size);
  }

  /** Bytes written and not yet consumed. */
  get pending(): number {
    return this.#written - this.#read;
  }

  /** Bytes that can be written without touching pending or held bytes. */
  get free(): number {
    return this.#buffer.length - (this.#written - (this.#held ?? this.#read));
  }

  /**
   * Appends `bytes` of `from`. When they do not fit, a larger buffer takes the pending bytes;
   * the piece the reader holds stays in the old one.
   */
  push(from: Buffer, bytes: number): void {
    if (bytes > this.free) {
      const old = this.#buffer;
      const pending = this.pending;
      this.#buffer = Buffer.allocUnsafe(Math.max(2 * old.length, pending + bytes));
      copyOut(old, this.#read, pending, this.#buffer);
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
}

function copyOut(from: Buffer, position: number, bytes: number, to: Buffer): void {
  const at = position % from.length;
  const first = Math.min(bytes, from.length - at);
  from.copy(to, 0, at, at + first);
  if (first < bytes) from.copy(to, first, 0, bytes - first);
}
