import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { DeadlineError, deadline, settledWithin, untilAborted } from "./deadline.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

/** A promise the test settles by hand. */
function pending<T>() {
  let resolve: (value: T) => void = () => {};
  let reject: (reason: unknown) => void = () => {};
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

const abortListeners = (signal: AbortSignal) => getEventListeners(signal, "abort").length;

describe("deadline", () => {
  it("settles like the work, then clears its timer and removes its listener", async () => {
    const caller = new AbortController();
    const work = pending<string>();
    const result = deadline(work.promise, { timeoutMs: 1000, what: "ping", signal: caller.signal });
    expect(vi.getTimerCount()).toBe(1);
    expect(abortListeners(caller.signal)).toBe(1);
    work.resolve("pong");
    await expect(result).resolves.toBe("pong");
    expect(vi.getTimerCount()).toBe(0);
    expect(abortListeners(caller.signal)).toBe(0);
  });

  it("passes the work's own rejection through and cleans up the same way", async () => {
    const caller = new AbortController();
    const failure = new Error("refused");
    const result = deadline(Promise.reject(failure), {
      timeoutMs: 1000,
      what: "ping",
      signal: caller.signal,
    });
    await expect(result).rejects.toBe(failure);
    expect(vi.getTimerCount()).toBe(0);
    expect(abortListeners(caller.signal)).toBe(0);
  });

  it("lets the work settle until the bound", async () => {
    const work = pending<string>();
    const result = deadline(work.promise, { timeoutMs: 250, what: "ping" });
    await vi.advanceTimersByTimeAsync(249);
    work.resolve("in time");
    await expect(result).resolves.toBe("in time");
  });

  it("rejects at the bound with a DeadlineError naming what timed out and the bound", async () => {
    const result = deadline(new Promise<never>(() => {}), { timeoutMs: 250, what: "ping" });
    const caught = result.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(250);
    const timeout = await caught;
    expect(timeout).toBeInstanceOf(DeadlineError);
    expect(timeout).toMatchObject({
      name: "DeadlineError",
      what: "ping",
      timeoutMs: 250,
      message: "ping timed out after 250 ms",
    });
    expect(vi.getTimerCount()).toBe(0);
  });

  it("aborts the signal it gave the work with the timeout error", async () => {
    let given: AbortSignal | undefined;
    const result = deadline(
      (signal) => {
        given = signal;
        return new Promise<never>(() => {}); // ignores its signal, as image inspect does
      },
      { timeoutMs: 100, what: "image inspect" },
    );
    const caught = result.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(100);
    const error = await caught;
    expect(error).toBeInstanceOf(DeadlineError);
    expect(given?.aborted).toBe(true);
    expect(given?.reason).toBe(error);
  });

  it("rejects with the caller's abort reason, and aborts the work's signal with it", async () => {
    const caller = new AbortController();
    let given: AbortSignal | undefined;
    const result = deadline(
      (signal) => {
        given = signal;
        return new Promise<never>(() => {});
      },
      { timeoutMs: 1000, what: "list containers", signal: caller.signal },
    );
    const reason = new Error("gateway stopping");
    caller.abort(reason);
    await expect(result).rejects.toBe(reason);
    expect(given?.reason).toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
    expect(abortListeners(caller.signal)).toBe(0);
  });

  it("rejects at once with the reason of a signal that already aborted, without starting the work", async () => {
    const reason = new Error("already stopped");
    const work = vi.fn(async () => "started");
    const result = deadline(work, {
      timeoutMs: 1000,
      what: "create container",
      signal: AbortSignal.abort(reason),
    });
    await expect(result).rejects.toBe(reason);
    expect(work).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });

  it("rejects with the error its timeoutError builds", async () => {
    class CallTimeout extends DeadlineError {
      override readonly name = "CallTimeout";
    }
    const result = deadline(new Promise<never>(() => {}), {
      timeoutMs: 10,
      what: "stop",
      timeoutError: () => new CallTimeout("Docker stop", 10, "Docker stop got no answer"),
    });
    const caught = result.catch((e: unknown) => e);
    await vi.advanceTimersByTimeAsync(10);
    expect(await caught).toMatchObject({
      name: "CallTimeout",
      what: "Docker stop",
      timeoutMs: 10,
      message: "Docker stop got no answer",
    });
  });

  it("unrefs its timer only when asked", async () => {
    const timers = vi.spyOn(globalThis, "setTimeout");
    const forever = new Promise<never>(() => {});
    void deadline(forever, { timeoutMs: 10, what: "drain", unref: true }).catch(() => {});
    void deadline(forever, { timeoutMs: 10, what: "ping" }).catch(() => {});
    const [unrefd, refd] = timers.mock.results.map((r) => r.value as NodeJS.Timeout);
    expect(unrefd?.hasRef()).toBe(false);
    expect(refd?.hasRef()).toBe(true);
    await vi.advanceTimersByTimeAsync(10);
  });
});

describe("untilAborted", () => {
  it("settles like the work and sets no timer", async () => {
    const caller = new AbortController();
    const result = untilAborted(Promise.resolve(7), caller.signal);
    expect(vi.getTimerCount()).toBe(0);
    await expect(result).resolves.toBe(7);
    expect(abortListeners(caller.signal)).toBe(0);
  });

  it("stops waiting with the abort reason while the work goes on", async () => {
    const caller = new AbortController();
    const work = pending<number>();
    const result = untilAborted(work.promise, caller.signal);
    caller.abort("stop");
    await expect(result).rejects.toBe("stop");
    expect(abortListeners(caller.signal)).toBe(0);
  });
});

describe("settledWithin", () => {
  it("answers true when the work settles in time, even by rejecting", async () => {
    await expect(settledWithin(Promise.reject(new Error("x")), 100)).resolves.toBe(true);
    await expect(settledWithin(Promise.resolve(), 100)).resolves.toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("answers false once the time is up, never rejecting", async () => {
    const answer = settledWithin(new Promise(() => {}), 100);
    await vi.advanceTimersByTimeAsync(99);
    let settled = false;
    void answer.then(() => {
      settled = true;
    });
    await Promise.resolve();
    expect(settled).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await expect(answer).resolves.toBe(false);
    expect(vi.getTimerCount()).toBe(0);
  });
});
