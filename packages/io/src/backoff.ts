/** An exponential backoff: `min(maxMs, baseMs * 2 ** (attempt - 1))`, optionally jittered. */
export interface Backoff {
  /** The wait after the first failure; it doubles after each further one. */
  readonly baseMs: number;
  /** Cap of that doubling wait. */
  readonly maxMs: number;
  /**
   * Share of the wait drawn at random, from 0 to 1: the wait is taken uniformly from
   * `[wait * (1 - jitter), wait]`, so many clients that failed together do not retry together.
   * Default {@link BackoffDefaults}.jitter (none: the wait is exact).
   */
  readonly jitter?: number | undefined;
  /** Uniform in [0, 1). Default {@link BackoffDefaults}.random; tests pass a fixed one. */
  readonly random?: (() => number) | undefined;
}

/** A platform's own wait for the next attempt (a 429's `retry_after`), for {@link backoffMs}. */
export interface RetryAfter {
  /** The wait the platform asked for, in ms; `undefined` when it named none. */
  readonly retryAfterMs: number | undefined;
  /**
   * `exact` (default): wait just that, whatever the backoff says (neither jittered nor
   * capped; the caller decides which waits it honours at all). `atLeast`: the longer of it
   * and the backoff, for a loop that keeps its backoff through a run of failures.
   */
  readonly honour?: "exact" | "atLeast" | undefined;
}

export const BackoffDefaults = {
  jitter: 0,
  random: Math.random,
} as const satisfies Required<Pick<Backoff, "jitter" | "random">>;

/**
 * The wait before the attempt after failed attempt `attempt` (from 1): the backoff doubled
 * per failure and capped, jittered when asked, or the platform's wait when it named one.
 */
export function backoffMs(attempt: number, backoff: Backoff, retryAfter?: RetryAfter): number {
  if (!Number.isInteger(attempt) || attempt < 1) {
    throw new RangeError(`backoff attempt must be an integer >= 1, got ${attempt}`);
  }
  const jitter = backoff.jitter ?? BackoffDefaults.jitter;
  if (!(jitter >= 0 && jitter <= 1)) {
    throw new RangeError(`backoff jitter must be between 0 and 1, got ${jitter}`);
  }
  // 2 ** 1023 is the largest finite power of two: after a long run of failures a zero base
  // still gives 0, not `0 * Infinity` (NaN).
  const doubled = backoff.baseMs * 2 ** Math.min(attempt - 1, 1023);
  const capped = Math.min(backoff.maxMs, doubled);
  const random = backoff.random ?? BackoffDefaults.random;
  const waitMs = jitter === 0 ? capped : Math.round(capped * (1 - jitter * random()));
  const platformMs = retryAfter?.retryAfterMs;
  if (platformMs === undefined) return waitMs;
  return retryAfter?.honour === "atLeast" ? Math.max(waitMs, platformMs) : platformMs;
}
