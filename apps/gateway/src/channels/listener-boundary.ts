import { errorSummary } from "../error-summary.js";
import type { Logger } from "../log.js";

/**
 * A platform client's event listener inside an error boundary (grammY's `errorBoundary` for
 * an event emitter): what `handle` throws, or the promise it returns rejects with, is logged
 * at error level with `step` and the error as `describe` summarises it, and goes no further.
 * Thrown into the client library's emitter it would be an uncaught exception; a rejected
 * promise nobody awaits is an unhandled rejection; either used to end the process, every
 * channel with it.
 * @param describe the log-safe view of the error (a platform's own, such as Discord's
 *   `describeError`); default {@link errorSummary}
 */
export function guardedListener<A extends unknown[]>(
  log: Logger,
  step: string,
  handle: (...args: A) => unknown,
  describe: (error: unknown) => unknown = errorSummary,
): (...args: A) => void {
  const failed = (error: unknown) => {
    log.error({ err: describe(error), step }, `channel listener "${step}" failed`);
  };
  return (...args) => {
    try {
      const result = handle(...args);
      if (result instanceof Promise) result.catch(failed);
    } catch (error) {
      failed(error);
    }
  };
}
