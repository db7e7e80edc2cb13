import { beforeEach, describe, expect, it } from "vitest";
import {
  RateLimitedError,
  type RetryEvent,
  type RetryVerdict,
  resolveRetryOptions,
  withRetry,
} from "./retry.js";

/** A failure as a platform would report it, classified by the test classifier below. */
class PlatformFailure extends Error {
  constructor(
    readonly status: number,
    readonly retryAfter?: number,
  ) {
    super(`status ${status}`);
  }
}

const classify = (error: unknown): RetryVerdict => {
  if (!(error instanceof PlatformFailure)) return { retry: false };
  if (error.status === 429) return { retry: true, afterSeconds: error.retryAfter };
  return error.status >= 500 ? { retry: true } : { retry: false };
};

/** Records each wait asked for and goes on at once; aborts like the real one. */
const waits: number[] = [];
const recordWait = async (ms: number, signal?: AbortSignal) => {
  waits.push(ms);
  signal?.throwIfAborted();
};

beforeEach(() => {
  waits.length = 0;
});

const fast = { minDelayMs: 1, maxDelayMs: 4, sleep: recordWait };

/** An operation that fails with the given errors in order, then succeeds. */
function scripted(failures: unknown[]) {
  const attempts: number[] = [];
  const operation = async (attempt: number): Promise<string> => {
    attempts.push(attempt);
    const failure = failures.shift();
    if (failure !== undefined) throw failure;
    return "done";
  };
  return { attempts, operation };
}

describe("withRetry", () => {
  it("retries 5xx with backoff until it succeeds", async () => {
    const { attempts, operation } = scripted([new PlatformFailure(502), new PlatformFailure(500)]);
    const events: RetryEvent[] = [];
    const result = await withRetry(operation, {
      classify,
      options: fast,
      onRetry: (e) => events.push(e),
    });
    expect(result).toBe("done");
    expect(attempts).toEqual([1, 2, 3]);
    expect(events.map((e) => [e.attempt, e.delayMs, e.retryAfterSeconds])).toEqual([
      [1, 1, undefined],
      [2, 2, undefined],
    ]);
    expect(waits).toEqual([1, 2]);
  });

  it("does not retry a final error and rejects with it unchanged", async () => {
    const failure = new PlatformFailure(400);
    const { attempts, operation } = scripted([failure]);
    await expect(withRetry(operation, { classify, options: fast })).rejects.toBe(failure);
    expect(attempts).toEqual([1]);
  });

  it("waits exactly the platform's retry_after before the next attempt", async () => {
    const { attempts, operation } = scripted([new PlatformFailure(429, 0.02)]);
    const events: RetryEvent[] = [];
    await withRetry(operation, { classify, options: fast, onRetry: (e) => events.push(e) });
    expect(attempts).toEqual([1, 2]);
    expect(events).toMatchObject([{ attempt: 1, delayMs: 20, retryAfterSeconds: 0.02 }]);
    expect(waits).toEqual([20]);
  });

  it("fails at once with RateLimitedError when retry_after is over the cap", async () => {
    const { attempts, operation } = scripted([new PlatformFailure(429, 61)]);
    const events: RetryEvent[] = [];
    const error = await withRetry(operation, {
      classify,
      options: { ...fast, maxRetryAfterSeconds: 60 },
      onRetry: (e) => events.push(e),
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(error).toMatchObject({ retryAfterSeconds: 61, attempts: 1 });
    expect(attempts).toEqual([1]);
    expect(events).toEqual([]);
  });

  it("honours a retry_after equal to the cap", async () => {
    const { attempts, operation } = scripted([new PlatformFailure(429, 0.01)]);
    await withRetry(operation, { classify, options: { ...fast, maxRetryAfterSeconds: 0.01 } });
    expect(attempts).toEqual([1, 2]);
  });

  it("reports RateLimitedError when 429s use up the attempts", async () => {
    const { attempts, operation } = scripted([
      new PlatformFailure(429, 0.001),
      new PlatformFailure(429, 0.001),
    ]);
    const error = await withRetry(operation, {
      classify,
      options: { ...fast, maxAttempts: 2 },
    }).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "RateLimitedError", attempts: 2 });
    expect(attempts).toEqual([1, 2]);
  });

  it("rejects with the last error when 5xx use up the attempts", async () => {
    const last = new PlatformFailure(503);
    const { attempts, operation } = scripted([new PlatformFailure(502), last]);
    await expect(
      withRetry(operation, { classify, options: { ...fast, maxAttempts: 2 } }),
    ).rejects.toBe(last);
    expect(attempts).toEqual([1, 2]);
  });

  it("retries a TypeError the classifier calls retryable", async () => {
    const { attempts, operation } = scripted([new TypeError("socket")]);
    await withRetry(operation, { classify: () => ({ retry: true }), options: fast });
    expect(attempts).toEqual([1, 2]);
  });

  it("stops waiting when the signal aborts and makes no further attempt", async () => {
    const controller = new AbortController();
    const { attempts, operation } = scripted([new PlatformFailure(429, 30)]);
    const pending = withRetry(operation, {
      classify,
      options: fast,
      signal: controller.signal,
      onRetry: () => controller.abort(new Error("shutdown")),
    });
    await expect(pending).rejects.toThrow("shutdown");
    expect(attempts).toEqual([1]);
  });
});

describe("retry settings", () => {
  it("doubles the backoff and caps it, exactly (no jitter)", async () => {
    const failures = [502, 502, 502, 502].map((status) => new PlatformFailure(status));
    const { attempts, operation } = scripted(failures);
    await withRetry(operation, {
      classify,
      options: { minDelayMs: 100, maxDelayMs: 350, maxAttempts: 5, sleep: recordWait },
    });
    expect(attempts).toEqual([1, 2, 3, 4, 5]);
    expect(waits).toEqual([100, 200, 350, 350]);
  });

  it("defaults to 4 attempts and a 60 s retry_after cap", () => {
    expect(resolveRetryOptions()).toMatchObject({ maxAttempts: 4, maxRetryAfterSeconds: 60 });
  });

  it("refuses nonsense", () => {
    expect(() => resolveRetryOptions({ maxAttempts: 0 })).toThrow(/maxAttempts/);
    expect(() => resolveRetryOptions({ minDelayMs: -1 })).toThrow(/minDelayMs/);
  });
});
