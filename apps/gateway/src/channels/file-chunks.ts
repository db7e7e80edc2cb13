import type { FileHandle } from "node:fs/promises";
import { BufferRing, readChunks } from "@mediagate/io";
import { Defaults } from "../defaults.js";

/**
 * The bytes of an open file, read in order into one buffer that every read reuses
 * (`BufferRing`, whose comment has the measurements): each chunk is a view of it, valid until
 * the next chunk is asked for, which is all the inbox needs (it hashes and writes each chunk
 * before it asks for the next). The handle is closed when the iteration ends, however it ends;
 * an aborted `signal` stops it before the next read.
 */
export async function* fileChunks(
  handle: FileHandle,
  signal: AbortSignal,
  bufferBytes: number = Defaults.download.fileReadBytes,
): AsyncGenerator<Uint8Array> {
  try {
    yield* readChunks(handle, { ring: new BufferRing({ buffers: 1, bufferBytes }), signal });
  } finally {
    await handle.close();
  }
}
