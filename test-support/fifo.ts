import { execFileSync } from "node:child_process";
import { closeSync, constants, openSync } from "node:fs";

/**
 * Named pipes a test makes where a file was expected, and their release: a reader blocked on
 * one (the bug a test shows when it fails) is let go by opening the pipe for writing.
 */
export class Fifos {
  readonly #paths: string[] = [];

  /** A named pipe at `path`. */
  at(path: string): string {
    execFileSync("mkfifo", [path]);
    this.#paths.push(path);
    return path;
  }

  /** Lets every reader still blocked on one of them go (call it in `afterEach`). */
  release(): void {
    for (const path of this.#paths.splice(0)) {
      try {
        closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
      } catch {
        // ENXIO: nobody is reading it
      }
    }
  }
}
