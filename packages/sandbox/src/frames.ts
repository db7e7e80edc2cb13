import type { Duplex } from "node:stream";

/** Stream ids of Docker's multiplexed attach protocol (Tty false). */
export const StreamType = { stdin: 0, stdout: 1, stderr: 2 } as const;

/**
 * Splits Docker's multiplexed stream (8-byte header: type, 3 zero bytes, big-endian
 * length; then the payload) into stdout/stderr payloads, across chunk boundaries.
 */
export class FrameDecoder {
  #pending: Buffer = Buffer.alloc(0);
  readonly #onFrame: (type: number, payload: Buffer) => void;

  constructor(onFrame: (type: number, payload: Buffer) => void) {
    this.#onFrame = onFrame;
  }

  push(chunk: Buffer): void {
    let buffer = this.#pending.length === 0 ? chunk : Buffer.concat([this.#pending, chunk]);
    while (buffer.length >= 8) {
      const length = buffer.readUInt32BE(4);
      if (buffer.length < 8 + length) break;
      const type = buffer[0] ?? StreamType.stdout;
      this.#onFrame(type, buffer.subarray(8, 8 + length));
      buffer = buffer.subarray(8 + length);
    }
    this.#pending = buffer.length === 0 ? Buffer.alloc(0) : Buffer.from(buffer);
  }
}

/** Resolves once `stream` ended, closed or failed, whichever comes first. */
export function streamEnded(stream: Duplex): Promise<void> {
  return new Promise<void>((resolve) => {
    stream.once("end", resolve);
    stream.once("close", resolve);
    stream.on("error", () => resolve());
  });
}

/**
 * Feeds an attached exec's multiplexed stream to `onFrame`, frame by frame; resolves once the
 * stream is over ({@link streamEnded}).
 */
export function readFrames(
  stream: Duplex,
  onFrame: (type: number, payload: Buffer) => void,
): Promise<void> {
  const decoder = new FrameDecoder(onFrame);
  stream.on("data", (chunk: Buffer) => decoder.push(chunk));
  return streamEnded(stream);
}
