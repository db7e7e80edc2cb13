import { afterEach, describe, expect, it, vi } from "vitest";
import { systemClock } from "./clock.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("systemClock", () => {
  it("reads the wall clock from Date and the monotonic one from performance", () => {
    vi.useFakeTimers({ toFake: ["Date", "performance"], now: 1_000_000 });
    const monoBefore = systemClock.monoMs();
    vi.setSystemTime(1_000_000 + 8 * 60 * 60_000);
    expect(systemClock.wallMs()).toBe(1_000_000 + 8 * 60 * 60_000);
    expect(systemClock.monoMs()).toBe(monoBefore);
    vi.advanceTimersByTime(250);
    expect(systemClock.monoMs() - monoBefore).toBe(250);
  });
});
