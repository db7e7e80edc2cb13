import { createHash } from "node:crypto";
import type { FileHandle } from "node:fs/promises";
import { MediagateError } from "@mediagate/io";
import { Defaults } from "./defaults.js";
import { messageOf } from "./docker-errors.js";
import type { InboxFailure } from "./types.js";

/** Why one inbox file failed, with the sentence the caller shows (see `InboxRefused`). */
export class InboxFileError extends MediagateError {
  override readonly name = "InboxFileError";
  readonly code = "MG_INBOX_FILE_REFUSED";
  readonly reason: InboxFailure;

  constructor(reason: InboxFailure, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.reason = reason;
  }
}

/**
 * Passes a file's bytes through once, as they stream: counts them, hashes them (SHA-256) and
 * keeps the first `Defaults.inboxSniffBytes` for the classifier. One byte past `maxBytes`
 * throws `too_large`; a source that throws becomes `source_failed`. Ending the iteration
 * early (a write failed) ends the source's iteration too, which destroys a Node stream.
 */
export class InboxMeter {
  size = 0;
  readonly #hash = createHash("sha256");
  readonly #head = Buffer.alloc(Defaults.inboxSniffBytes);
  #headLength = 0;

  constructor(
    readonly filename: string,
    readonly maxBytes: number,
  ) {}

  async *pass(
    source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
    signal?: AbortSignal,
  ): AsyncGenerator<Buffer> {
    const iterator = iteratorOf(source);
    try {
      for (;;) {
        let next: IteratorResult<Uint8Array>;
        try {
          next = await this.#unlessAborted(iterator.next(), signal);
        } catch (error) {
          if (error instanceof InboxFileError) throw error;
          throw new InboxFileError(
            "source_failed",
            `${this.filename}: the download failed (${messageOf(error)})`,
            { cause: error },
          );
        }
        if (next.done === true) return;
        const chunk = toBuffer(next.value);
        this.size += chunk.length;
        if (this.size > this.maxBytes) throw tooLarge(this.filename, this.maxBytes);
        this.#hash.update(chunk);
        if (this.#headLength < this.#head.length) {
          this.#headLength += chunk.copy(this.#head, this.#headLength);
        }
        yield chunk;
      }
    } finally {
      // Not awaited: an async generator stalled in an await answers `return` only when it
      // resumes, which a download that hangs never does. A Node stream is destroyed at once.
      try {
        Promise.resolve(iterator.return?.()).catch(() => undefined);
      } catch {
        // The source is being given up; its own error is not this file's.
      }
    }
  }

  /** `next`, or an `aborted` error as soon as `signal` aborts (a stalled download included). */
  #unlessAborted<T>(next: T | Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    const pending = Promise.resolve(next);
    if (signal === undefined) return pending;
    pending.catch(() => undefined); // given up on abort: its own failure no longer matters
    return new Promise<T>((resolve, reject) => {
      const onAbort = () => reject(aborted(this.filename));
      if (signal.aborted) return onAbort();
      signal.addEventListener("abort", onAbort, { once: true });
      pending.then(
        (value) => {
          signal.removeEventListener("abort", onAbort);
          resolve(value);
        },
        (error: unknown) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        },
      );
    });
  }

  /** The first bytes (all of a file shorter than `Defaults.inboxSniffBytes`). */
  get head(): Uint8Array {
    return this.#head.subarray(0, this.#headLength);
  }

  /** Hex SHA-256 of everything that passed; call once, after the last chunk. */
  digest(): string {
    return this.#hash.digest("hex");
  }
}

export function tooLarge(filename: string, maxBytes: number): InboxFileError {
  return new InboxFileError("too_large", `${filename} is over the ${maxBytes}-byte limit`);
}

export function aborted(filename: string): InboxFileError {
  return new InboxFileError("aborted", `${filename}: the save was stopped`);
}

/** Writes all of `chunk` at the handle's current position. */
export async function writeAll(handle: FileHandle, chunk: Buffer): Promise<void> {
  let offset = 0;
  while (offset < chunk.length) {
    const { bytesWritten } = await handle.write(chunk, offset, chunk.length - offset);
    offset += bytesWritten;
  }
}

/** Destroys a source that will not be read (a Node stream; an iterable has nothing to free). */
export function discard(source: unknown): void {
  if (typeof source !== "object" || source === null || !("destroy" in source)) return;
  if (typeof source.destroy === "function") source.destroy();
}

function iteratorOf(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): AsyncIterator<Uint8Array> | Iterator<Uint8Array> {
  if (Symbol.asyncIterator in source) return source[Symbol.asyncIterator]();
  return source[Symbol.iterator]();
}

function toBuffer(chunk: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
  if (typeof chunk === "string") return Buffer.from(chunk, "utf8");
  throw new InboxFileError("source_failed", "the download gave something other than bytes");
}
