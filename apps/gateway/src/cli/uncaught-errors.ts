import { findInCauses } from "../error-causes.js";
import { errorSummary } from "../error-summary.js";
import type { Logger } from "../log.js";

/** What {@link onUncaughtErrors} listens on: `process`, or an emitter in tests. */
export type ErrorSource = Pick<NodeJS.EventEmitter, "on" | "off">;

/** Options of {@link onUncaughtErrors}. */
export interface UncaughtErrorOptions {
  readonly logger: Logger;
  /**
   * Called once, with the first uncaught exception: stop the gateway the way a fatal channel
   * error does (bounded), after which the process exits 1.
   */
  readonly onFatal: (error: Error) => void;
  /** Ends the process at once (a second uncaught exception); default `process.exit`. */
  readonly exit?: ((code: number) => void) | undefined;
  /** Where the errors arrive; default `process`. */
  readonly source?: ErrorSource | undefined;
}

/**
 * The step an error says it failed in: the first `step` field along its `cause` chain (a
 * pipeline step's `PipelineStepError`, a channel listener's), else `unknown` (the stack,
 * logged with it, still names the function).
 */
export function stepOf(error: unknown): string {
  const failed = findInCauses(
    error,
    (link): link is { step: string } => typeof (link as { step?: unknown }).step === "string",
  );
  return failed?.step ?? "unknown";
}

/**
 * What `mediagate start` does with an error no boundary caught (docs/operations.md, "Errors
 * nothing caught"). Every channel callback and pipeline step has a boundary of its own; this
 * is the last line.
 *
 * Each error is logged as {@link errorSummary} summarises it (no field that holds an object: a
 * platform's error can carry a whole request body).
 *
 * - An unhandled promise rejection is logged at error level with its step and the gateway
 *   keeps running (Node's default would end the process, and every channel with it). A
 *   rejection is one async operation that failed and that nobody awaited: the operation is
 *   over, nothing is left half-done in the process's own memory by the rejection itself.
 * - An uncaught exception is logged at fatal level with its step, and the gateway stops
 *   gracefully and exits 1 (`onFatal`), for its service manager to restart it. It was thrown
 *   from a synchronous stretch of code that did not finish, so the state it was changing
 *   cannot be trusted; the journal makes a restart lose nothing that was accepted
 *   (docs/durability.md). A second one while stopping exits at once.
 *
 * Returns a function that removes the listeners.
 */
export function onUncaughtErrors(options: UncaughtErrorOptions): () => void {
  const source = options.source ?? process;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const { logger } = options;
  let stopping = false;
  const onRejection = (reason: unknown) => {
    logger.error(
      { err: errorSummary(reason), step: stepOf(reason) },
      "unhandled promise rejection; the gateway keeps running",
    );
  };
  const onException = (error: Error, origin?: string) => {
    logger.fatal(
      { err: errorSummary(error), step: stepOf(error), origin },
      stopping
        ? "uncaught exception while stopping; exiting at once"
        : "uncaught exception; the gateway stops (its state cannot be trusted)",
    );
    if (stopping) {
      exit(1);
      return;
    }
    stopping = true;
    options.onFatal(error);
  };
  source.on("unhandledRejection", onRejection);
  source.on("uncaughtException", onException);
  return () => {
    source.off("unhandledRejection", onRejection);
    source.off("uncaughtException", onException);
  };
}
