import { backoffMs, MediagateError, retry, type Sleep, sleep } from "@mediagate/io";
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

/** Tuning of {@link withRetry}. */
export interface RetryOptions {
  /** Attempts in total, the first included. Default `Defaults.retry.maxAttempts`. */
  readonly maxAttempts?: number | undefined;
  /**
   * The longest server-requested wait honoured. A longer one fails at once with
   * {@link RateLimitedError} instead of holding the delivery. Default
   * `Defaults.retry.maxRetryAfterSeconds`.
   */
  readonly maxRetryAfterSeconds?: number | undefined;
  /**
   * First backoff delay when the server named none; doubles per retry (`backoffMs` of
   * `@mediagate/io`, without jitter). Default `Defaults.retry.minDelayMs`.
   */
  readonly minDelayMs?: number | undefined;
  /** Cap of that backoff. Default `Defaults.retry.maxDelayMs`. */
  readonly maxDelayMs?: number | undefined;
  /**
   * How a wait between attempts is waited (a platform's `retry_after` or the backoff).
   * Default a real timer; tests record the wait asked for and go on at once.
   */
  readonly sleep?: Sleep | undefined;
}

/** {@link RetryOptions} with every default applied. */
export interface ResolvedRetryOptions {
  readonly maxAttempts: number;
  readonly maxRetryAfterSeconds: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
  readonly sleep: Sleep;
}

export const RetryDefaults = {
  ...Defaults.retry,
  sleep,
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
export class RateLimitedError extends MediagateError {
  override readonly name = "RateLimitedError";
  readonly code = "MG_DELIVERY_RATE_LIMITED";

  constructor(
    readonly retryAfterSeconds: number,
    readonly attempts: number,
  ) {
    super(`rate limited: retry after ${retryAfterSeconds} s (after ${attempts} attempt(s))`);
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

/**
 * Runs `operation` with retries as the classifier allows (the loop and the backoff are
 * `@mediagate/io`'s). A platform wait is honoured exactly; a wait over `maxRetryAfterSeconds`
 * — or a 429 on the last attempt — rejects with {@link RateLimitedError}. A final failure
 * rejects with the original error. `operation` gets the attempt number and must build a fresh
 * request (fresh file stream) each time. Aborting `signal` stops waiting and rejects with the
 * abort reason.
 */
export async function withRetry<T>(
  operation: (attempt: number) => Promise<T>,
  call: RetryCall,
): Promise<T> {
  const options = resolveRetryOptions(call.options);
  const backoff = { baseMs: options.minDelayMs, maxMs: options.maxDelayMs };
  return retry(operation, {
    maxAttempts: options.maxAttempts,
    sleep: options.sleep,
    signal: call.signal,
    onFailure: ({ error, attempt, attemptsLeft }) => {
      const verdict = call.classify(error);
      if (!verdict.retry) throw error;
      const after = verdict.afterSeconds;
      if (after !== undefined && (after > options.maxRetryAfterSeconds || attemptsLeft === 0)) {
        throw new RateLimitedError(after, attempt);
      }
      if (attemptsLeft === 0) throw error;
      const retryAfterMs = after === undefined ? undefined : Math.ceil(after * 1000);
      const delayMs = backoffMs(attempt, backoff, { retryAfterMs });
      call.onRetry?.({ attempt, error, delayMs, retryAfterSeconds: after });
      return delayMs;
    },
  });
}
