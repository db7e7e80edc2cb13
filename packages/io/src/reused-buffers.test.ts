import { randomBytes } from "node:crypto";
import { appendFile, type FileHandle, mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { BufferRing, ByteRing, type ChunkSource, readChunks } from "./reused-buffers.js";

/** A promise settled by hand. */
function deferred(): { promise: Promise<void>; resolve: () => void; reject: (e: Error) => void } {
  let resolve: () => void = () => undefined;
  let reject: (error: Error) => void = () => undefined;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every callback already queued run (one turn of the event loop, no clock). */
const turn = () => new Promise((resolve) => setImmediate(resolve));

/** A file in memory with a file handle's positional `read`, recording each read. */
function memoryFile(bytes: Buffer): ChunkSource & { reads: { position: number | null }[] } {
  let offset = 0;
  const reads: { position: number | null }[] = [];
  return {
    reads,
    async read(buffer, at, length, position) {
      reads.push({ position });
      const from = position ?? offset;
      const bytesRead = bytes.copy(buffer, at, from, Math.min(bytes.length, from + length));
      if (position === null) offset += bytesRead;
      return { bytesRead };
    },
  };
}

describe("BufferRing", () => {
  it("hands its buffers out in turn, each again only after the others", async () => {
    const ring = new BufferRing({ buffers: 3, bufferBytes: 16 });
    const handed: Buffer[] = [];
    for (let i = 0; i < 7; i++) handed.push(await ring.next());
    expect(new Set(handed).size).toBe(3);
    expect(handed.map((buffer) => handed.indexOf(buffer))).toEqual([0, 1, 2, 0, 1, 2, 0]);
  });

  it("makes each buffer when first needed, sized to what was asked up to bufferBytes", async () => {
    const ring = new BufferRing({ buffers: 4, bufferBytes: 1000 });
    const small = await ring.next(300);
    const capped = await ring.next(5000);
    expect([small.length, small.buffer.byteLength]).toEqual([300, 300]);
    expect([capped.length, capped.buffer.byteLength]).toEqual([1000, 1000]);
    expect((await ring.next()).length).toBe(1000);
  });

  it("keeps a slot's buffer for smaller needs and replaces it for a larger one", async () => {
    const ring = new BufferRing({ buffers: 1, bufferBytes: 1000 });
    const first = await ring.next(200);
    expect(await ring.next(100)).toBe(first);
    const larger = await ring.next(500);
    expect(larger).not.toBe(first);
    expect(larger.length).toBe(500);
  });

  it("never hands a buffer out again while its hold is pending", async () => {
    const ring = new BufferRing({ buffers: 2, bufferBytes: 8 });
    const write = deferred();
    const held = await ring.next();
    ring.holdUntil(write.promise);
    const other = await ring.next(); // the other slot: free
    let again: Buffer | undefined;
    const next = ring.next().then((buffer) => {
      again = buffer;
    });
    await turn();
    expect(again).toBeUndefined();
    write.resolve();
    await next;
    expect(again).toBe(held);
    expect(other).not.toBe(held);
  });

  it("rejects the turn that would reuse a buffer whose hold failed, and settled() too", async () => {
    const ring = new BufferRing({ buffers: 2, bufferBytes: 8 });
    await ring.next();
    const write = deferred();
    ring.holdUntil(write.promise);
    write.reject(new Error("socket hang up")); // nobody awaits it yet: no unhandled rejection
    await turn();
    await ring.next();
    await expect(ring.settled()).rejects.toThrow("socket hang up");
    await expect(ring.next()).rejects.toThrow("socket hang up");
  });

  it("settles once every hold has", async () => {
    const ring = new BufferRing({ buffers: 3, bufferBytes: 8 });
    const writes = [deferred(), deferred()];
    for (const write of writes) {
      await ring.next();
      ring.holdUntil(write.promise);
    }
    let settled = false;
    const done = ring.settled().then(() => {
      settled = true;
    });
    writes[0]?.resolve();
    await turn();
    expect(settled).toBe(false);
    writes[1]?.resolve();
    await done;
    expect(settled).toBe(true);
  });

  it("refuses a shape it cannot work with, and a hold before any buffer", () => {
    expect(() => new BufferRing({ buffers: 0, bufferBytes: 8 })).toThrow(/1 buffer or more/);
    expect(() => new BufferRing({ buffers: 2, bufferBytes: 0.5 })).toThrow(/1 byte or more/);
    const ring = new BufferRing({ buffers: 1, bufferBytes: 8 });
    expect(() => ring.holdUntil(Promise.resolve())).toThrow(/before any buffer/);
  });
});

describe("readChunks", () => {
  let dir: string;
  const handles: FileHandle[] = [];
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), "mg-io-"));
  });
  afterEach(async () => {
    for (const handle of handles.splice(0)) await handle.close();
    await rm(dir, { recursive: true, force: true });
  });

  async function fileOf(bytes: Buffer): Promise<FileHandle> {
    const path = join(dir, `f-${handles.length}`);
    await writeFile(path, bytes);
    const handle = await open(path, "r");
    handles.push(handle);
    return handle;
  }

  /** Every chunk copied as it comes (a view is valid only until its buffer comes round). */
  async function collect(
    chunks: AsyncIterable<Buffer>,
  ): Promise<{ bytes: Buffer; views: Buffer[] }> {
    const copies: Buffer[] = [];
    const views: Buffer[] = [];
    for await (const chunk of chunks) {
      copies.push(Buffer.from(chunk));
      views.push(chunk);
    }
    return { bytes: Buffer.concat(copies), views };
  }

  const Chunk = 4096;

  it.each([0, 1, Chunk - 1, Chunk, 9 * Chunk + 7])(
    "reads a file of %i bytes whole and in order, by position or at the file's own",
    async (size) => {
      const bytes = randomBytes(size);
      const handle = await fileOf(bytes);
      const ring = () => new BufferRing({ buffers: 2, bufferBytes: Chunk });
      const positional = await collect(readChunks(handle, { ring: ring(), start: 0, size }));
      expect(positional.bytes.equals(bytes)).toBe(true);
      const onward = await collect(readChunks(handle, { ring: ring() }));
      expect(onward.bytes.equals(bytes)).toBe(true);
      expect(positional.views.length).toBe(Math.ceil(size / Chunk));
    },
  );

  it("reads from `start` without moving the file's position, and on from it without", async () => {
    const bytes = randomBytes(1000);
    const file = memoryFile(bytes);
    const ring = new BufferRing({ buffers: 1, bufferBytes: 300 });
    const tail = await collect(readChunks(file, { ring, start: 400 }));
    expect(tail.bytes.equals(bytes.subarray(400))).toBe(true);
    const all = await collect(readChunks(file, { ring }));
    expect(all.bytes.equals(bytes)).toBe(true);
    expect(file.reads.map((read) => read.position)).toEqual([
      400,
      700,
      1000,
      null,
      null,
      null,
      null,
      null,
    ]);
  });

  it("stops at `size` when the file grew, and at the file's end when it is shorter", async () => {
    const bytes = randomBytes(5000);
    const handle = await fileOf(bytes);
    await appendFile(join(dir, "f-0"), randomBytes(1000));
    const ring = new BufferRing({ buffers: 2, bufferBytes: Chunk });
    expect((await collect(readChunks(handle, { ring, start: 0, size: 5000 }))).bytes).toEqual(
      bytes,
    );
    const longer = await collect(readChunks(handle, { ring, start: 0, size: 10_000 }));
    expect(longer.bytes.length).toBe(6000);
  });

  it("sizes its buffers to the bytes left: a small file takes one small buffer", async () => {
    const ring = new BufferRing({ buffers: 4, bufferBytes: Chunk });
    const small = await collect(
      readChunks(await fileOf(randomBytes(3000)), { ring, start: 0, size: 3000 }),
    );
    expect(small.views.map((view) => view.buffer.byteLength)).toEqual([3000]);
    const tail = await collect(
      readChunks(memoryFile(randomBytes(Chunk + 10)), {
        ring: new BufferRing({ buffers: 4, bufferBytes: Chunk }),
        start: 0,
        size: Chunk + 10,
      }),
    );
    expect(tail.views.map((view) => view.buffer.byteLength)).toEqual([Chunk, 10]);
  });

  it("stops before the next read once the signal aborted", async () => {
    const file = memoryFile(randomBytes(10 * Chunk));
    const stop = new AbortController();
    const ring = new BufferRing({ buffers: 1, bufferBytes: Chunk });
    const chunks = readChunks(file, { ring, signal: stop.signal });
    await expect(
      (async () => {
        for await (const _ of chunks) stop.abort(new Error("stopped"));
      })(),
    ).rejects.toThrow("stopped");
    expect(file.reads).toHaveLength(1);
  });

  it("does not read into a buffer while the write of its last chunk is pending", async () => {
    const file = memoryFile(randomBytes(5 * Chunk));
    const ring = new BufferRing({ buffers: 2, bufferBytes: Chunk });
    const writes = [deferred(), deferred(), deferred()];
    const chunks = readChunks(file, { ring, start: 0 })[Symbol.asyncIterator]();
    for (const write of writes.slice(0, 2)) {
      await chunks.next();
      ring.holdUntil(write.promise);
    }
    const third = chunks.next();
    await turn();
    expect(file.reads).toHaveLength(2); // the third read waits for the first buffer's write
    writes[0]?.resolve();
    await third;
    expect(file.reads).toHaveLength(3);
    await chunks.return(undefined);
  });

  it("never writes over a chunk its consumer may still hold (buffers - 1 more asked for)", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 0, max: 600 }),
        fc.boolean(),
        async (buffers, bufferBytes, size, positional) => {
          const bytes = randomBytes(size);
          const ring = new BufferRing({ buffers, bufferBytes });
          const options = positional ? { ring, start: 0, size } : { ring };
          const held: { view: Buffer; copy: Buffer }[] = [];
          const copies: Buffer[] = [];
          for await (const chunk of readChunks(memoryFile(bytes), options)) {
            held.push({ view: chunk, copy: Buffer.from(chunk) });
            if (held.length > buffers) held.shift();
            for (const { view, copy } of held) expect(view.equals(copy)).toBe(true);
            expect(new Set(held.map(({ view }) => view.buffer)).size).toBe(held.length);
            copies.push(Buffer.from(chunk));
          }
          expect(Buffer.concat(copies).equals(bytes)).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe("ByteRing", () => {
  const bytes = (text: string) => Buffer.from(text);

  it("wraps round, handing over contiguous pieces, without touching the piece held", () => {
    const ring = new ByteRing(8);
    ring.push(bytes("abcdef"), 6);
    const held = ring.take(4);
    expect(held.toString()).toBe("abcd");
    expect(ring.free).toBe(2); // "abcd" is held, "ef" pending
    ring.push(bytes("gh"), 2);
    expect(held.toString()).toBe("abcd");
    ring.release();
    expect(ring.free).toBe(4);
    ring.push(bytes("ijkl"), 4); // into the start again, where "abcd" was
    expect(ring.take(100).toString()).toBe("efgh");
    ring.release();
    expect(ring.take(100).toString()).toBe("ijkl");
    ring.release();
    expect([ring.pending, ring.free]).toEqual([0, 8]);
  });

  it("moves to a larger buffer when more arrives than fits, keeping the held piece intact", () => {
    const ring = new ByteRing(8);
    ring.push(bytes("abcdefgh"), 8);
    const held = ring.take(3);
    ring.push(bytes("xyz"), 3); // TLS went on after the pause: 3 bytes, 0 free
    ring.push(bytes("0123456789"), 10);
    expect(held.toString()).toBe("abc");
    ring.release();
    const rest: string[] = [];
    while (ring.pending > 0) {
      rest.push(ring.take(100).toString());
      ring.release();
    }
    expect(rest.join("")).toBe("defghxyz0123456789");
  });

  it("skips what peek showed without handing it over", () => {
    const ring = new ByteRing(8);
    ring.push(bytes("head\nbody"), 9);
    const view = ring.peek();
    const lf = view.indexOf(10);
    ring.skip(lf + 1);
    expect(ring.take(100).toString()).toBe("body");
  });

  it("hands over every byte pushed, in order, and never changes the piece held", () => {
    const step = fc.oneof(
      fc.record({ push: fc.uint8Array({ minLength: 1, maxLength: 40 }) }),
      fc.record({ take: fc.integer({ min: 1, max: 50 }) }),
      fc.record({ skip: fc.integer({ min: 1, max: 50 }) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 32 }),
        fc.array(step, { maxLength: 60 }),
        (size, steps) => {
          const ring = new ByteRing(size);
          const pushed: number[] = [];
          const seen: number[] = [];
          let held: { view: Buffer; copy: Buffer } | undefined;
          const check = () => {
            if (held !== undefined) expect(held.view.equals(held.copy)).toBe(true);
          };
          for (const next of steps) {
            if ("push" in next) {
              ring.push(Buffer.from(next.push), next.push.length);
              pushed.push(...next.push);
            } else if ("take" in next) {
              check();
              ring.release();
              const piece = ring.take(next.take);
              held = { view: piece, copy: Buffer.from(piece) };
              seen.push(...piece);
            } else {
              const view = ring.peek();
              const count = Math.min(next.skip, view.length);
              seen.push(...view.subarray(0, count));
              ring.skip(count);
            }
            check();
            expect(ring.pending).toBe(pushed.length - seen.length);
          }
          while (ring.pending > 0) {
            ring.release();
            seen.push(...ring.take(Number.POSITIVE_INFINITY));
          }
          expect(seen).toEqual(pushed);
        },
      ),
      { numRuns: 500 },
    );
  });
});
