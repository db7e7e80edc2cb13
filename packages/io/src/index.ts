// @mediagate/io: the I/O primitives every package shares (bounded waits, retry backoff,
// reused buffers). Each is written once here; the packages call it instead of a copy.
export type { BufferRingOptions, ChunkSource, ReadChunksOptions } from "./reused-buffers.js";
export { BufferRing, ByteRing, readChunks } from "./reused-buffers.js";
