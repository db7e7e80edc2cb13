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
