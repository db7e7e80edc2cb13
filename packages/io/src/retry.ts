import { type Sleep, sleep } from "./sleep.js";

/** One failed attempt, as {@link RetryLoopOptions.onFailure} sees it. */
export interface RetryFailure {
  readonly error: unknown;
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  /** Attempts still allowed after this one: 0 when it was the last. */
  readonly attemptsLeft: number;
}

/** Options of {@link retry}. */
export interface RetryLoopOptions {
  /**
   * Decides what a failure leads to: returns the wait before the next attempt (usually a
   * {@link backoffMs}), or throws to give up (rethrow `failure.error` to reject with it). Also
   * called after the last attempt, where it may throw an error of its own (a rate limit); if it
   * returns, the failure's error is rethrown.
   */
  readonly onFailure: (failure: RetryFailure) => number;
  /** Attempts in total, the first included. Default {@link RetryLoopDefaults}.maxAttempts (no limit). */
  readonly maxAttempts?: number | undefined;
  /** How a wait is waited. Default {@link RetryLoopDefaults}.sleep (a real timer). */
  readonly sleep?: Sleep | undefined;
  /**
   * Ends the loop: no attempt starts once it aborted, a wait ends early, and the loop rejects
   * with its reason (also when an attempt fails after it aborted).
   */
  readonly signal?: AbortSignal | undefined;
}

export const RetryLoopDefaults = {
  maxAttempts: Number.POSITIVE_INFINITY,
  sleep,
} as const satisfies Required<Pick<RetryLoopOptions, "maxAttempts" | "sleep">>;

/**
 * Runs `operation` (with the attempt number, from 1) until it resolves, waiting between
 * attempts as `onFailure` says. `operation` must build a fresh request each time. A result
 * that arrives is returned even if `signal` aborted meanwhile: the work was done.
 */
export async function retry<T>(
  operation: (attempt: number) => Promise<T>,
  options: RetryLoopOptions,
): Promise<T> {
  const maxAttempts = options.maxAttempts ?? RetryLoopDefaults.maxAttempts;
  if (!(maxAttempts >= 1) || !(Number.isInteger(maxAttempts) || maxAttempts === Infinity)) {
    throw new RangeError(`retry maxAttempts must be an integer >= 1, got ${maxAttempts}`);
  }
  const wait = options.sleep ?? RetryLoopDefaults.sleep;
  const { signal } = options;
  for (let attempt = 1; ; attempt++) {
    signal?.throwIfAborted();
    try {
      return await operation(attempt);
    } catch (error) {
      signal?.throwIfAborted();
      const attemptsLeft = maxAttempts - attempt;
      const delayMs = options.onFailure({ error, attempt, attemptsLeft });
      if (attemptsLeft <= 0) throw error;
      await wait(delayMs, signal);
    }
  }
}
