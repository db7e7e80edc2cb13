import { constants } from "node:fs";
import { type FileHandle, open } from "node:fs/promises";
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

/**
 * How a local file a user's message refers to is opened: read-only, never waiting for a
 * writer. A path that is a FIFO by the time it is opened (swapped in after a check, or by the
 * time a message is run again) opens at once and is refused by its `fstat`, instead of
 * blocking the session (and a thread of libuv's pool, which no `/stop` frees) until something
 * writes to it. Reads of a regular file ignore the flag.
 */
export const ReadFlags = constants.O_RDONLY | constants.O_NONBLOCK;

/**
 * Opens `path` for reading with {@link ReadFlags}: the handle when it is a regular file,
 * `undefined` (the handle closed) when it is a device, socket or pipe. Rejects as `open` does
 * (`ENOENT`, `EACCES`, …), with the path in the error's message.
 */
export async function openRegularFile(path: string): Promise<FileHandle | undefined> {
  const handle = await open(path, ReadFlags);
  const regular = await handle.stat().then(
    (info) => info.isFile(),
    () => false,
  );
  if (regular) return handle;
  await handle.close();
  return undefined;
}
