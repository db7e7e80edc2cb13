import { getEventListeners } from "node:events";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { sleep } from "./sleep.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe("sleep", () => {
  it("resolves after the wait and removes its listener", async () => {
    const caller = new AbortController();
    let done = false;
    const waiting = sleep(500, caller.signal).then(() => {
      done = true;
    });
    await vi.advanceTimersByTimeAsync(499);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    await waiting;
    expect(done).toBe(true);
    expect(getEventListeners(caller.signal, "abort")).toHaveLength(0);
  });

  it("rejects with the abort reason and clears its timer", async () => {
    const caller = new AbortController();
    const waiting = sleep(60_000, caller.signal);
    caller.abort(new Error("stopping"));
    await expect(waiting).rejects.toThrow("stopping");
    expect(vi.getTimerCount()).toBe(0);
  });

  it("rejects at once when the signal already aborted", async () => {
    await expect(sleep(1000, AbortSignal.abort("gone"))).rejects.toBe("gone");
    expect(vi.getTimerCount()).toBe(0);
  });
});
