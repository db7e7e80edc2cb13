import { randomBytes } from "node:crypto";
import { type FileHandle, mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable, Writable } from "node:stream";
import { extract } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SpoolArchive, type TarEntry, tarHeader, tarTrailer } from "./inbox-tar.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "mg-tar-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const mtime = new Date("2026-12-01T10:00:00Z");
const entry = (size: number, uid = 5_000_000): TarEntry => ({
  name: "3-abcd",
  size,
  mode: 0o600,
  uid,
  gid: 2_000_000,
  mtime,
});

/** The entries of a tar archive, read by tar-stream (an independent parser). */
async function entriesOf(archive: Buffer) {
  const found: Array<{ header: Record<string, unknown>; bytes: Buffer }> = [];
  for await (const item of Readable.from([archive]).pipe(extract())) {
    const chunks: Buffer[] = [];
    for await (const chunk of item) chunks.push(chunk as Buffer);
    found.push({
      header: item.header as unknown as Record<string, unknown>,
      bytes: Buffer.concat(chunks),
    });
  }
  return found;
}

async function spoolOf(bytes: Buffer): Promise<FileHandle> {
  const path = join(dir, `spool-${randomBytes(4).toString("hex")}`);
  await writeFile(path, bytes);
  return open(path, "r");
}

/**
 * A request body's stand-in, slower than the disk: it calls back for each chunk only many
 * event-loop turns later (the spool's reads complete meanwhile), keeping a copy made at that
 * moment — the last moment the chunk's bytes must still be the ones written. A buffer refilled
 * before its callback shows up as different bytes.
 */
class LateSink extends Writable {
  readonly copies: Buffer[] = [];

  override _write(chunk: Buffer, _encoding: BufferEncoding, callback: () => void): void {
    void afterTurns(50).then(() => {
      this.copies.push(Buffer.from(chunk));
      callback();
    });
  }

  bytes(): Buffer {
    return Buffer.concat(this.copies);
  }
}

async function afterTurns(turns: number): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe("tar archive of one spooled inbox file", () => {
  it("writes a header an independent parser reads, with PAX numbers past ustar's octal fields", async () => {
    const data = randomBytes(1000);
    const archive = Buffer.concat([tarHeader(entry(data.length)), data, tarTrailer(data.length)]);
    expect(archive.length % 512).toBe(0);
    const [only, ...rest] = await entriesOf(archive);
    expect(rest).toEqual([]);
    expect(only?.header).toMatchObject({
      name: "3-abcd",
      size: 1000,
      mode: 0o600,
      gid: 2_000_000,
      type: "file",
      mtime,
      // tar-stream leaves PAX numbers in `pax`; the engine (Go's archive/tar) applies them.
      pax: { uid: "5000000" },
    });
    expect(only?.bytes.equals(data)).toBe(true);
  });

  it("needs no PAX header when every number fits", () => {
    expect(tarHeader(entry(10, 1000)).length).toBe(512);
    expect(tarHeader(entry(10, 2_097_152)).length).toBe(1536);
  });

  it("refuses a name that is not a plain staged name", () => {
    expect(() => tarHeader({ ...entry(1), name: "a b" })).toThrow(/staged file name/);
    expect(() => tarHeader({ ...entry(1), name: "x".repeat(101) })).toThrow(/staged file name/);
  });

  it("pipes the archive through a few reused buffers, each refilled only after its write called back", async () => {
    const data = randomBytes(1024 * 1024 + 7); // 17 buffer loads: the ring of 4 comes round often
    const spool = await spoolOf(data);
    try {
      const archive = new SpoolArchive(spool, entry(data.length));
      const sink = new LateSink();
      const ended = new Promise((resolve) => sink.on("finish", resolve));
      archive.pipe(sink);
      await archive.finished();
      await ended;
      const expected = Buffer.concat([
        tarHeader(entry(data.length)),
        data,
        tarTrailer(data.length),
      ]);
      expect(sink.bytes().equals(expected)).toBe(true);
      const [only] = await entriesOf(sink.bytes());
      expect(only?.bytes.equals(data)).toBe(true);
    } finally {
      await spool.close();
    }
  });

  it("stops when it is destroyed mid-upload, with a write still unanswered", async () => {
    const spool = await spoolOf(randomBytes(512 * 1024));
    try {
      const archive = new SpoolArchive(spool, entry(512 * 1024));
      let writes = 0;
      const stuck = new Writable({
        write(_chunk, _encoding, _callback) {
          writes += 1; // never calls back: an engine that stopped reading
        },
      });
      archive.pipe(stuck);
      await new Promise((resolve) => setImmediate(resolve));
      archive.destroy();
      await archive.finished();
      expect(writes).toBeLessThan(5);
      expect(stuck.writableEnded).toBe(false);
    } finally {
      await spool.close();
    }
  });

  it("fails with the request's error, which the Docker client sees on the archive", async () => {
    const spool = await spoolOf(randomBytes(300 * 1024));
    try {
      const archive = new SpoolArchive(spool, entry(300 * 1024));
      const errors: Error[] = [];
      archive.on("error", (error) => errors.push(error));
      const broken = new Writable({
        write(_chunk, _encoding, callback) {
          callback(new Error("socket hang up"));
        },
      });
      broken.on("error", () => undefined);
      const closed = new Promise((resolve) => archive.once("close", resolve));
      archive.pipe(broken);
      await archive.finished();
      await closed;
      expect(errors.map((error) => error.message)).toEqual(["socket hang up"]);
      expect(archive.destroyed).toBe(true);
    } finally {
      await spool.close();
    }
  });

  it("refuses to be read other than by piping", async () => {
    const spool = await spoolOf(randomBytes(10));
    try {
      const archive = new SpoolArchive(spool, entry(10));
      await expect(async () => {
        for await (const _ of archive) {
          // never reached
        }
      }).rejects.toThrow(/can only be piped/);
    } finally {
      await spool.close();
    }
  });
});
