import { afterEach, describe, expect, it, vi } from "vitest";
import { backoffMs } from "./backoff.js";
import { retry } from "./retry.js";

afterEach(() => {
  vi.useRealTimers();
});

/** An operation that fails with the given errors in order, then answers "done". */
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

/** A sleep that records each wait and goes on at once. */
function recordingSleep() {
  const waits: number[] = [];
  return { waits, sleep: async (ms: number) => void waits.push(ms) };
}

const backoff = { baseMs: 100, maxMs: 250 };

describe("retry", () => {
  it("retries until the operation succeeds, waiting what onFailure answers", async () => {
    const { attempts, operation } = scripted([new Error("a"), new Error("b"), new Error("c")]);
    const { waits, sleep } = recordingSleep();
    const seen: [number, number][] = [];
    const result = await retry(operation, {
      sleep,
      onFailure: ({ attempt, attemptsLeft }) => {
        seen.push([attempt, attemptsLeft]);
        return backoffMs(attempt, backoff);
      },
    });
    expect(result).toBe("done");
    expect(attempts).toEqual([1, 2, 3, 4]);
    expect(waits).toEqual([100, 200, 250]);
    expect(seen).toEqual([
      [1, Number.POSITIVE_INFINITY],
      [2, Number.POSITIVE_INFINITY],
      [3, Number.POSITIVE_INFINITY],
    ]);
  });

  it("gives up with what onFailure throws, without waiting", async () => {
    const final = new Error("400 Bad Request");
    const { attempts, operation } = scripted([final]);
    const { waits, sleep } = recordingSleep();
    const error = await retry(operation, {
      sleep,
      onFailure: ({ error }) => {
        throw error;
      },
    }).catch((e: unknown) => e);
    expect(error).toBe(final);
    expect(attempts).toEqual([1]);
    expect(waits).toEqual([]);
  });

  it("rethrows the last failure once the attempts are used up, after telling onFailure", async () => {
    const last = new Error("503");
    const { attempts, operation } = scripted([new Error("502"), last]);
    const { waits, sleep } = recordingSleep();
    const left: number[] = [];
    const error = await retry(operation, {
      maxAttempts: 2,
      sleep,
      onFailure: ({ attemptsLeft }) => {
        left.push(attemptsLeft);
        return 10;
      },
    }).catch((e: unknown) => e);
    expect(error).toBe(last);
    expect(attempts).toEqual([1, 2]);
    expect(left).toEqual([1, 0]);
    expect(waits).toEqual([10]);
  });

  it("stops waiting when the signal aborts, rejects with its reason, and tries no more", async () => {
    vi.useFakeTimers();
    const stop = new AbortController();
    const { attempts, operation } = scripted([new Error("429")]);
    const pending = retry(operation, {
      signal: stop.signal,
      onFailure: () => 30_000,
    });
    const caught = pending.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(1000);
    const reason = new Error("shutdown");
    stop.abort(reason);
    expect(await caught).toBe(reason);
    expect(attempts).toEqual([1]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("ends after a sleep that resolves at the abort instead of rejecting", async () => {
    const stop = new AbortController();
    const { attempts, operation } = scripted([new Error("disk full"), new Error("disk full")]);
    const error = await retry(operation, {
      signal: stop.signal,
      sleep: async () => stop.abort("stopped"),
      onFailure: () => 1000,
    }).catch((e: unknown) => e);
    expect(error).toBe("stopped");
    expect(attempts).toEqual([1]);
  });

  it("rejects with the abort reason, not the failure, when an attempt fails after the abort", async () => {
    const stop = new AbortController();
    const onFailure = vi.fn(() => 0);
    const error = await retry(
      async () => {
        stop.abort("stopped");
        throw new Error("socket closed by the abort");
      },
      { signal: stop.signal, onFailure },
    ).catch((e: unknown) => e);
    expect(error).toBe("stopped");
    expect(onFailure).not.toHaveBeenCalled();
  });

  it("returns a result that arrived after the abort: the work was done", async () => {
    const stop = new AbortController();
    const result = await retry(
      async () => {
        stop.abort("stopped");
        return "sent";
      },
      { signal: stop.signal, onFailure: () => 0 },
    );
    expect(result).toBe("sent");
  });

  it("starts no attempt once the signal aborted", async () => {
    const operation = vi.fn(async () => "never");
    await expect(
      retry(operation, { signal: AbortSignal.abort("gone"), onFailure: () => 0 }),
    ).rejects.toBe("gone");
    expect(operation).not.toHaveBeenCalled();
  });

  it("refuses fewer than one attempt", async () => {
    await expect(retry(async () => 1, { maxAttempts: 0, onFailure: () => 0 })).rejects.toThrow(
      RangeError,
    );
  });

  it("waits with the real sleep by default", async () => {
    vi.useFakeTimers();
    const { attempts, operation } = scripted([new Error("once")]);
    const pending = retry(operation, { onFailure: () => 500 });
    await vi.advanceTimersByTimeAsync(499);
    expect(attempts).toEqual([1]);
    await vi.advanceTimersByTimeAsync(1);
    await expect(pending).resolves.toBe("done");
    expect(attempts).toEqual([1, 2]);
  });
});
