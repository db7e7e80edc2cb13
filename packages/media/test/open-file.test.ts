import { randomBytes } from "node:crypto";
import { appendFile, mkdtemp, open, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ChunkRing, DescriptorFile } from "../src/open-file.js";

let dir: string;
const files: DescriptorFile[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "mediagate-open-file-"));
});
afterEach(async () => {
  for (const file of files.splice(0)) await file.close();
  await rm(dir, { recursive: true, force: true });
});

async function held(bytes: Buffer): Promise<DescriptorFile> {
  const path = join(dir, `f-${files.length}`);
  await writeFile(path, bytes);
  const file = new DescriptorFile(await open(path, "r"), bytes.length, "test");
  files.push(file);
  return file;
}

/** Every chunk copied as it comes (a view is valid only until the ring comes round). */
async function collect(file: DescriptorFile): Promise<{ bytes: Buffer; chunks: Uint8Array[] }> {
  const copies: Buffer[] = [];
  const chunks: Uint8Array[] = [];
  for await (const chunk of file.chunks()) {
    copies.push(Buffer.from(chunk));
    chunks.push(chunk);
  }
  return { bytes: Buffer.concat(copies), chunks };
}

describe("DescriptorFile.chunks", () => {
  it.each([0, 1, ChunkRing.chunkBytes - 1, ChunkRing.chunkBytes, 9 * ChunkRing.chunkBytes + 7])(
    "reads a file of %i bytes whole, in order, from byte 0 each time",
    async (size) => {
      const bytes = randomBytes(size);
      const file = await held(bytes);
      expect((await collect(file)).bytes.equals(bytes)).toBe(true);
      expect((await collect(file)).bytes.equals(bytes)).toBe(true);
    },
  );

  it("reuses its few buffers in turn, none larger than the file", async () => {
    const { chunks } = await collect(await held(randomBytes(10 * ChunkRing.chunkBytes)));
    expect(chunks).toHaveLength(10);
    const backing = new Set(chunks.map((chunk) => chunk.buffer));
    expect(backing.size).toBe(ChunkRing.buffers);
    expect(chunks[0]?.buffer).toBe(chunks[ChunkRing.buffers]?.buffer);
    const small = await collect(await held(randomBytes(3000)));
    expect(small.chunks.map((chunk) => chunk.buffer.byteLength)).toEqual([3000]);
  });

  it("serves only the size it was opened with when the file grows afterwards", async () => {
    const bytes = randomBytes(5000);
    const file = await held(bytes);
    await appendFile(join(dir, "f-0"), randomBytes(1000));
    expect((await collect(file)).bytes.equals(bytes)).toBe(true);
  });
});
