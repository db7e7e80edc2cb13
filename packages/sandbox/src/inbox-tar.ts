import type { FileHandle } from "node:fs/promises";
import { Readable } from "node:stream";
import { BufferRing, readChunks } from "@mediagate/io";

/** What the one entry of an inbox archive says about its file. */
export interface TarEntry {
  /** A plain relative name (ASCII, at most 100 bytes: the archive path names staged files). */
  readonly name: string;
  readonly size: number;
  readonly mode: number;
  readonly uid: number;
  readonly gid: number;
  readonly mtime: Date;
}

const Block = 512;
/** The bytes read from the spool at a time, and how many such reads may be in flight. */
const ChunkBytes = 64 * 1024;
const RingSize = 4;

/**
 * The header blocks of a one-file tar archive: ustar, preceded by a PAX extended header for
 * any number its octal field cannot hold (session uids go past ustar's 2097151; sizes past
 * 8 GiB).
 */
export function tarHeader(entry: TarEntry): Buffer {
  const name = Buffer.from(entry.name, "utf8");
  if (name.length === 0 || name.length > 100 || /[^\x21-\x7e]/.test(entry.name)) {
    throw new Error(`not a staged file name: ${JSON.stringify(entry.name)}`);
  }
  const pax: string[] = [];
  const numbers = { uid: entry.uid, gid: entry.gid, size: entry.size };
  const ustar = headerBlock(name, "0", {
    mode: entry.mode,
    mtime: Math.floor(entry.mtime.getTime() / 1000),
    ...numbers,
  });
  for (const [key, value] of Object.entries(numbers)) {
    if (!fitsOctal(value, key === "size" ? 11 : 7)) pax.push(paxRecord(key, String(value)));
  }
  if (pax.length === 0) return ustar;
  const records = Buffer.from(pax.join(""), "utf8");
  const paxHeader = headerBlock(Buffer.from("PaxHeader"), "x", {
    mode: 0o644,
    uid: 0,
    gid: 0,
    size: records.length,
    mtime: 0,
  });
  return Buffer.concat([paxHeader, padded(records), ustar]);
}

/** What follows a file of `size` bytes: the padding of its last block and two zero blocks. */
export function tarTrailer(size: number): Buffer {
  return Buffer.alloc(((Block - (size % Block)) % Block) + 2 * Block);
}

/**
 * A one-file tar archive of a spooled file, as the body of the engine's `putArchive` request.
 * It is piped (what the Docker client does with a request body) and pumps the file itself:
 * the bytes are read into {@link RingSize} reused buffers (`BufferRing`, whose comment has the
 * measurements: 22–38 MB of RSS growth for a 45 MB upload through a file stream, about 6 MB
 * this way), and a buffer is read into again only once the request's write callback said its
 * bytes left the process; the ring is also the backpressure (at most {@link RingSize} chunks
 * in flight). It cannot be read any other way: that fails loudly rather than quietly falling
 * back to the allocation it exists to avoid.
 */
export class SpoolArchive extends Readable {
  readonly #spool: FileHandle;
  readonly #entry: TarEntry;
  #pumping: Promise<void> | undefined;

  constructor(spool: FileHandle, entry: TarEntry) {
    super();
    this.#spool = spool;
    this.#entry = entry;
  }

  /**
   * Settles once the pump stopped touching the spool: every byte written out (the request
   * then ended, unless `end: false`), or a failure (this stream is then destroyed with it).
   * Resolves at once when the archive was never piped.
   */
  async finished(): Promise<void> {
    await this.#pumping?.catch(() => undefined);
  }

  override pipe<T extends NodeJS.WritableStream>(destination: T, options?: { end?: boolean }): T {
    if (this.#pumping !== undefined) throw new Error("a SpoolArchive is piped once");
    this.#pumping = this.#pump(destination).then(
      () => {
        if (options?.end !== false) destination.end();
        this.destroy();
      },
      (error: unknown) => {
        this.destroy(error instanceof Error ? error : new Error(String(error)));
        throw error;
      },
    );
    this.#pumping.catch(() => undefined);
    return destination;
  }

  override _read(): void {
    this.destroy(new Error("a SpoolArchive can only be piped"));
  }

  async #pump(destination: NodeJS.WritableStream): Promise<void> {
    const { promise: stopped, release } = stopSignal(this, destination);
    try {
      const writeOut = (chunk: Buffer) => Promise.race([written(destination, chunk), stopped]);
      const ring = new BufferRing({ buffers: RingSize, bufferBytes: ChunkBytes });
      await writeOut(tarHeader(this.#entry));
      const { size } = this.#entry;
      let offset = 0;
      for await (const chunk of readChunks(this.#spool, { ring, start: 0, size })) {
        offset += chunk.length;
        ring.holdUntil(writeOut(chunk));
      }
      // The header promised `size` bytes: a shorter archive would be a corrupt one.
      if (offset < size) throw new Error(`the spool ended at ${offset} of ${size} bytes`);
      await writeOut(tarTrailer(size));
      await ring.settled();
    } finally {
      release();
    }
  }
}

/** Resolves when `destination` called back for `chunk` (its bytes left the process). */
function written(destination: NodeJS.WritableStream, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    destination.write(chunk, (error?: Error | null) => (error ? reject(error) : resolve()));
  });
}

/**
 * Rejects when either stream closes or fails before the pump is done: a destroyed request
 * may never call back for what it still held, and the upload's caller destroys the archive
 * to stop it. `release` removes the listeners.
 */
function stopSignal(
  archive: Readable,
  destination: NodeJS.WritableStream,
): { promise: Promise<never>; release: () => void } {
  let stop: (error?: unknown) => void = () => undefined;
  const promise = new Promise<never>((_, reject) => {
    stop = (error?: unknown) =>
      reject(error instanceof Error ? error : new Error("the archive upload stopped early"));
  });
  promise.catch(() => undefined);
  const events = ["close", "error"] as const;
  for (const event of events) {
    archive.on(event, stop);
    destination.on(event, stop);
  }
  const release = () => {
    for (const event of events) {
      archive.off(event, stop);
      destination.removeListener(event, stop);
    }
  };
  return { promise, release };
}

function headerBlock(
  name: Buffer,
  type: "0" | "x",
  fields: { mode: number; uid: number; gid: number; size: number; mtime: number },
): Buffer {
  const block = Buffer.alloc(Block);
  name.copy(block, 0);
  octal(block, 100, 8, fields.mode);
  octal(block, 108, 8, fields.uid);
  octal(block, 116, 8, fields.gid);
  octal(block, 124, 12, fields.size);
  octal(block, 136, 12, fields.mtime);
  block.write(type, 156, "latin1");
  block.write("ustar\u000000", 257, "latin1");
  block.fill(" ", 148, 156); // the checksum is summed with its own field as spaces
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\u0000 `, 148, "latin1");
  return block;
}

/** Writes `value` in octal into the field at `at` (`width` bytes, NUL-ended); 0 when it cannot. */
function octal(block: Buffer, at: number, width: number, value: number): void {
  const digits = width - 1;
  const fits = fitsOctal(value, digits);
  block.write(`${(fits ? value : 0).toString(8).padStart(digits, "0")}\u0000`, at, "latin1");
}

function fitsOctal(value: number, digits: number): boolean {
  return Number.isSafeInteger(value) && value >= 0 && value < 8 ** digits;
}

/** One PAX record, `"<length> <key>=<value>\n"`, whose length counts its own digits. */
function paxRecord(key: string, value: string): string {
  const rest = ` ${key}=${value}\n`;
  let length = rest.length + 1;
  while (String(length).length + rest.length !== length)
    length = String(length).length + rest.length;
  return `${length}${rest}`;
}

function padded(bytes: Buffer): Buffer {
  return Buffer.concat([bytes, Buffer.alloc((Block - (bytes.length % Block)) % Block)]);
}
