import { fstatSync } from "node:fs";
import type { LineSink } from "../log.js";

/** Erase the terminal's current line and return to its start. */
const ClearLine = "\r\u001b[2K";

/**
 * The terminal the console chat shares with the logs when stdout and stderr are the same one.
 * The chat stays on stdout and the logs on stderr; what this adds is that a log line never
 * lands inside a chat line: one written while the prompt waits for input takes the prompt's
 * line, and the prompt is drawn again below it with what was typed so far.
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

  /** `sink` (stderr) made to keep its lines out of the prompt's line. */
  logSink(sink: LineSink): LineSink {
    return {
      write: (line: string) => {
        const redraw = this.#redraw;
        if (redraw === undefined) return sink.write(line);
        sink.write(`${ClearLine}${line}`);
        redraw();
        return true;
      },
    };
  }
}
