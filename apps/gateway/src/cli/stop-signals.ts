import { constants } from "node:os";
import { performance } from "node:perf_hooks";
import { Defaults } from "../defaults.js";

/** The signals that stop `mediagate start`. */
export type StopSignal = "SIGINT" | "SIGTERM";

/** What {@link onStopSignals} listens on: `process`, or an emitter in tests. */
export interface SignalSource {
  on(event: StopSignal, listener: (signal: StopSignal) => void): unknown;
  off(event: StopSignal, listener: (signal: StopSignal) => void): unknown;
}

/** Options of {@link onStopSignals}. */
export interface StopSignalOptions {
  /** Called once, with the first stop signal: begin the graceful stop. */
  readonly onStop: (signal: StopSignal) => void;
  /** Ends the process at once; default `process.exit`. */
  readonly exit?: ((code: number) => void) | undefined;
  /** Where signals arrive; default `process`. */
  readonly source?: SignalSource | undefined;
  /** A monotonic clock in milliseconds; default `performance.now`. */
  readonly now?: (() => number) | undefined;
  /**
   * Repeats this soon after the first signal are the same request; default
   * `Defaults.stopSignals.repeatWindowMs`.
   */
  readonly repeatWindowMs?: number | undefined;
}

/** Defaults of {@link StopSignalOptions}. */
export const StopSignalDefaults = Defaults.stopSignals satisfies Required<
  Pick<StopSignalOptions, "repeatWindowMs">
>;

/**
 * SIGINT/SIGTERM handling of `mediagate start`. The first signal asks for a graceful stop
 * (`onStop`); a stop signal again, `repeatWindowMs` or later after the first, exits at once
 * with 128 + the signal's number (130, 143). Repeats inside the window are the first request
 * delivered twice, not a second one: a terminal sends Ctrl-C to its whole foreground process
 * group, and `pnpm run` (like other supervisors that share the group) forwards it to its child
 * again, a few milliseconds later. Counting that copy as "again" would cut every drain short
 * and turn a clean stop under `pnpm mediagate start` into exit 130. Returns a function that
 * removes the listeners.
 */
export function onStopSignals(options: StopSignalOptions): () => void {
  const source = options.source ?? process;
  const exit = options.exit ?? ((code: number) => process.exit(code));
  const now = options.now ?? (() => performance.now());
  const windowMs = options.repeatWindowMs ?? StopSignalDefaults.repeatWindowMs;
  let firstAtMs: number | undefined;
  const listener = (signal: StopSignal) => {
    if (firstAtMs === undefined) {
      firstAtMs = now();
      options.onStop(signal);
    } else if (now() - firstAtMs >= windowMs) {
      exit(128 + constants.signals[signal]);
    }
  };
  source.on("SIGINT", listener);
  source.on("SIGTERM", listener);
  return () => {
    source.off("SIGINT", listener);
    source.off("SIGTERM", listener);
  };
}
