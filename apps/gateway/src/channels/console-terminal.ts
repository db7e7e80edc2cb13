import { fstatSync } from "node:fs";
import type { LineSink } from "../log.js";

/**
 * The terminal the console chat shares with the logs when stdout and stderr are the same one.
 * The chat stays on stdout and the logs on stderr; what this adds is that a log line never
 * lands inside a chat line: one written while the prompt waits for input starts on a fresh
 * line, and the prompt is shown again below it (what was typed so far stays above and is
 * still part of the line being typed).
 */
export class SharedTerminal {
  #redraw: (() => void) | undefined;

  /**
   * A shared terminal when stdout and stderr are the same terminal device, else `undefined`
   * (a log redirected to a file or a pipe cannot land amid the chat).
   */
  static forStdio(): SharedTerminal | undefined {
    if (process.stdout.isTTY !== true || process.stderr.isTTY !== true) return undefined;
    try {
      return fstatSync(1).rdev === fstatSync(2).rdev ? new SharedTerminal() : undefined;
    } catch {
      return undefined;
    }
  }

  /** The console showed its prompt; `redraw` shows it again. */
  promptShown(redraw: () => void): void {
    this.#redraw = redraw;
  }

  /** The prompt's line ended (the user pressed Enter, or chat output moved past it). */
  lineEnded(): void {
    this.#redraw = undefined;
  }

  /** Whether the cursor sits after the prompt, waiting for input. */
  get promptWaiting(): boolean {
    return this.#redraw !== undefined;
  }

  /** `sink` (stderr) made to keep its lines out of the prompt's line. */
  logSink(sink: LineSink): LineSink {
    return {
      write: (line: string) => {
        const redraw = this.#redraw;
        if (redraw === undefined) return sink.write(line);
        sink.write(`\n${line}`);
        redraw();
        return true;
      },
    };
  }
}
