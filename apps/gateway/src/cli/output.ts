import type { Writable } from "node:stream";

/**
 * One of the CLI's output streams (stdout, stderr) that outlives its reader. Without an `error`
 * listener, a write to a pipe whose reader is gone (`mediagate sandbox ls | head -1`) or to a
 * full file (`> /mnt/full/out`) ends the process with Node's stack trace on the next tick,
 * wherever the command then is: between two profiles of a reap, or between a profile and the
 * journal of `store migrate`. Here a failed stream only stops taking output, and the command
 * finishes what it started.
 */
export class CliOutput {
  readonly #stream: Writable;
  #closed = false;
  #lost: NodeJS.ErrnoException | undefined;

  /** `onLost` hears once of a failure other than a reader that went away (EPIPE). */
  constructor(stream: Writable, onLost: (error: NodeJS.ErrnoException) => void) {
    this.#stream = stream;
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (this.#closed) return;
      this.#closed = true;
      // A reader that has read enough (head, grep -q) is no failure of the command.
      if (error.code === "EPIPE") return;
      this.#lost = error;
      onLost(error);
    });
  }

  /** Writes `text` unless the stream failed before; what comes after a failure is dropped. */
  write(text: string): void {
    if (this.#closed || this.#stream.destroyed) return;
    this.#stream.write(text);
  }

  /** The write error that lost output (not EPIPE), if any: the run must not exit 0. */
  get lost(): NodeJS.ErrnoException | undefined {
    return this.#lost;
  }
}
