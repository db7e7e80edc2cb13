import { describe, expect, it } from "vitest";
import { backoffMs } from "./backoff.js";

const policy = { baseMs: 500, maxMs: 8000 };

describe("backoffMs", () => {
  it("doubles per failed attempt from the base", () => {
    expect([1, 2, 3, 4, 5].map((attempt) => backoffMs(attempt, policy))).toEqual([
      500, 1000, 2000, 4000, 8000,
    ]);
  });

  it("stays at the cap however many attempts failed", () => {
    expect(backoffMs(6, policy)).toBe(8000);
    expect(backoffMs(10_000, policy)).toBe(8000);
    expect(backoffMs(10_000, { baseMs: 0, maxMs: 8000 })).toBe(0);
  });

  it("keeps a jittered wait between (1 - jitter) times the wait and the wait", () => {
    const jittered = { ...policy, jitter: 0.5 };
    expect(backoffMs(3, { ...jittered, random: () => 0 })).toBe(2000);
    expect(backoffMs(3, { ...jittered, random: () => 0.5 })).toBe(1500);
    expect(backoffMs(3, { ...jittered, random: () => 0.999_999 })).toBe(1000);
    for (let draw = 0; draw < 200; draw++) {
      const waitMs = backoffMs(5, { ...policy, jitter: 1 });
      expect(waitMs).toBeGreaterThanOrEqual(0);
      expect(waitMs).toBeLessThanOrEqual(8000);
    }
  });

  it("waits exactly when jitter is off, without drawing a random number", () => {
    let draws = 0;
    const random = () => {
      draws++;
      return 0.5;
    };
    expect(backoffMs(2, { ...policy, random })).toBe(1000);
    expect(draws).toBe(0);
  });

  it("waits what the platform asked for instead, neither capped nor jittered", () => {
    const jittered = { ...policy, jitter: 1, random: () => 0.5 };
    expect(backoffMs(4, jittered, { retryAfterMs: 20 })).toBe(20);
    expect(backoffMs(1, jittered, { retryAfterMs: 30_000 })).toBe(30_000);
    expect(backoffMs(1, jittered, { retryAfterMs: undefined })).toBe(250);
  });

  it("keeps the longer of the two when the platform's wait is honoured as a floor", () => {
    expect(backoffMs(5, policy, { retryAfterMs: 3000, honour: "atLeast" })).toBe(8000);
    expect(backoffMs(1, policy, { retryAfterMs: 3000, honour: "atLeast" })).toBe(3000);
  });

  it("refuses an attempt below 1 and a jitter outside [0, 1]", () => {
    expect(() => backoffMs(0, policy)).toThrow(RangeError);
    expect(() => backoffMs(1.5, policy)).toThrow(RangeError);
    expect(() => backoffMs(1, { ...policy, jitter: 1.5 })).toThrow(/jitter/);
    expect(() => backoffMs(1, { ...policy, jitter: Number.NaN })).toThrow(/jitter/);
  });
});
