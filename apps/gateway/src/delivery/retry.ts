import { setTimeout as timerSleep } from "node:timers/promises";
import pRetry, { AbortError } from "p-retry";
import { Defaults } from "../defaults.js";

/**
 * What a platform says about a failed call (docs/media.md): retry it (after the wait the platform
 * asked for, if it named one), or give up.
 */
export type RetryVerdict =
  | { readonly retry: true; readonly afterSeconds?: number | undefined }
  | { readonly retry: false };

/**
 * Platform knowledge lives here: Telegram says 429 + `retry_after`, Discord says 429 +
 * `retry_after` in the body, both retry 5xx and connection errors, neither retries other 4xx.
 */
export type RetryClassifier = (error: unknown) => RetryVerdict;

/** Waits `ms` (rejecting when `signal` aborts); tests pass one that records the wait and returns. */
export type RetrySleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** A real timer. */
const realSleep: RetrySleep = async (ms, signal) => {
  await timerSleep(ms, undefined, signal === undefined ? {} : { signal });
};

/** Tuning of {@link withRetry}. */
export interface RetryOptions {
  /** Attempts in total, the first included. Default 4. */
  readonly maxAttempts?: number | undefined;
  /**
   * The longest server-requested wait honoured. A longer one fails at once with
   * {@link RateLimitedError} instead of holding the delivery. Default 60.
   */
  readonly maxRetryAfterSeconds?: number | undefined;
  /** First backoff delay when the server named none; doubles per retry. Default 500. */
  readonly minDelayMs?: number | undefined;
  /** Cap of that backoff. Default 8000. */
  readonly maxDelayMs?: number | undefined;
  /**
   * How a wait between attempts is waited (a platform's `retry_after` or the backoff).
   * Default a real timer; tests record the wait asked for and go on at once.
   */
  readonly sleep?: RetrySleep | undefined;
}

/** {@link RetryOptions} with every default applied. */
export interface ResolvedRetryOptions {
  readonly maxAttempts: number;
  readonly maxRetryAfterSeconds: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
  readonly sleep: RetrySleep;
}

export const RetryDefaults = {
  ...Defaults.retry,
  sleep: realSleep,
} as const satisfies ResolvedRetryOptions;

/** One retry about to happen, for logs. */
export interface RetryEvent {
  /** The attempt that failed, from 1. */
  readonly attempt: number;
  readonly error: unknown;
  readonly delayMs: number;
  /** Set when the wait comes from the platform (429). */
  readonly retryAfterSeconds?: number | undefined;
}

export interface RetryCall {
  readonly classify: RetryClassifier;
  readonly options?: RetryOptions | undefined;
  readonly signal?: AbortSignal | undefined;
  /** Called before each wait; must not throw. */
  readonly onRetry?: ((event: RetryEvent) => void) | undefined;
}

/**
 * The platform asked for a wait longer than we hold a delivery for, or kept answering 429
 * until the attempts ran out. Delivery reports it as a typed `rate_limited` outcome.
 */
export class RateLimitedError extends Error {
  override readonly name = "RateLimitedError";

  constructor(
    readonly retryAfterSeconds: number,
    readonly attempts: number,
  ) {
    super(`rate limited: retry after ${retryAfterSeconds} s (after ${attempts} attempt(s))`);
  }
}

/** Carries a retryable failure and its wait through p-retry. */
class RetryableFailure extends Error {
  override readonly name = "RetryableFailure";

  constructor(
    readonly original: unknown,
    readonly delayMs: number,
    readonly retryAfterSeconds: number | undefined,
  ) {
    super("retryable failure");
  }
}

/** Resolved settings, validated once. */
export function resolveRetryOptions(options: RetryOptions = {}): ResolvedRetryOptions {
  const settings = {
    maxAttempts: options.maxAttempts ?? RetryDefaults.maxAttempts,
    maxRetryAfterSeconds: options.maxRetryAfterSeconds ?? RetryDefaults.maxRetryAfterSeconds,
    minDelayMs: options.minDelayMs ?? RetryDefaults.minDelayMs,
    maxDelayMs: options.maxDelayMs ?? RetryDefaults.maxDelayMs,
    sleep: options.sleep ?? RetryDefaults.sleep,
  };
  if (!Number.isInteger(settings.maxAttempts) || settings.maxAttempts < 1) {
    throw new RangeError(`retry.maxAttempts must be an integer >= 1, got ${settings.maxAttempts}`);
  }
  for (const key of ["maxRetryAfterSeconds", "minDelayMs", "maxDelayMs"] as const) {
    if (!Number.isFinite(settings[key]) || settings[key] < 0) {
      throw new RangeError(`retry.${key} must be a number >= 0, got ${settings[key]}`);
    }
  }
  return settings;
}

/** Exponential backoff for the retry after failed attempt `attempt` (from 1). */
export function backoffMs(attempt: number, options: ResolvedRetryOptions): number {
  return Math.min(options.maxDelayMs, options.minDelayMs * 2 ** (attempt - 1));
}

/**
 * Runs `operation` with retries (p-retry) as the classifier allows. A platform wait is
 * honoured exactly; a wait over `maxRetryAfterSeconds` — or a 429 on the last attempt —
 * rejects with {@link RateLimitedError}. A final failure rejects with the original error.
 * `operation` gets the attempt number and must build a fresh request (fresh file stream)
 * each time. Aborting `signal` stops waiting and rejects with the abort reason.
 */
export async function withRetry<T>(
  operation: (attempt: number) => Promise<T>,
  call: RetryCall,
): Promise<T> {
  const options = resolveRetryOptions(call.options);
  const attemptOnce = async (attempt: number): Promise<T> => {
    try {
      return await operation(attempt);
    } catch (error) {
      if (call.signal?.aborted) throw new AbortError(asError(call.signal.reason ?? error));
      const verdict = call.classify(error);
      if (!verdict.retry) throw new AbortError(asError(error));
      const after = verdict.afterSeconds;
      if (after !== undefined && after > options.maxRetryAfterSeconds) {
        throw new AbortError(new RateLimitedError(after, attempt));
      }
      if (attempt >= options.maxAttempts) {
        throw new AbortError(
          after === undefined ? asError(error) : new RateLimitedError(after, attempt),
        );
      }
      const delayMs = after === undefined ? backoffMs(attempt, options) : Math.ceil(after * 1000);
      throw new RetryableFailure(error, delayMs, after);
    }
  };
  return pRetry(attemptOnce, {
    retries: options.maxAttempts - 1,
    minTimeout: 0,
    maxTimeout: 0,
    randomize: false,
    ...(call.signal === undefined ? {} : { signal: call.signal }),
    onFailedAttempt: async ({ error, attemptNumber }) => {
      if (!(error instanceof RetryableFailure)) return;
      call.onRetry?.({
        attempt: attemptNumber,
        error: error.original,
        delayMs: error.delayMs,
        retryAfterSeconds: error.retryAfterSeconds,
      });
      await options.sleep(error.delayMs, call.signal);
    },
  });
}

/** p-retry rethrows `AbortError#originalError`, which must be an Error; keep the original. */
function asError(value: unknown): Error {
  if (value instanceof Error) return value;
  return Object.assign(new Error(String(value)), { original: value });
}
