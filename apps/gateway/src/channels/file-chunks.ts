import type { FileHandle } from "node:fs/promises";
import { Defaults } from "../defaults.js";

/**
 * The bytes of an open file, read in order into one buffer that every read reuses: each
 * chunk is a view of it, valid until the next chunk is asked for. A Node file stream reads
 * into a new buffer every time instead, which V8 frees only at its next full collection (a
 * 45 MB file left tens of MB of them behind, `bench/README.md`). The handle is closed when
 * the iteration ends, however it ends; an aborted `signal` stops it before the next read.
 */
export async function* fileChunks(
  handle: FileHandle,
  signal: AbortSignal,
  bufferBytes: number = Defaults.download.fileReadBytes,
): AsyncGenerator<Uint8Array> {
  try {
    const buffer = Buffer.allocUnsafe(bufferBytes);
    for (;;) {
      signal.throwIfAborted();
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, null);
      if (bytesRead === 0) return;
      yield buffer.subarray(0, bytesRead);
    }
  } finally {
    await handle.close();
  }
}
