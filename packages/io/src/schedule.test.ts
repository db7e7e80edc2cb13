import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { scheduleWithTimer } from "./schedule.js";

beforeEach(() => {
  vi.useFakeTimers();
});

afterEach(() => {
  vi.useRealTimers();
});

describe("scheduleWithTimer", () => {
  it("runs after the delay on a timer that does not keep the process alive", () => {
    const timers = vi.spyOn(globalThis, "setTimeout");
    const run = vi.fn();
    scheduleWithTimer(run, 1000);
    const timer = timers.mock.results[0]?.value as NodeJS.Timeout | undefined;
    expect(timer?.hasRef()).toBe(false);
    vi.advanceTimersByTime(999);
    expect(run).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(run).toHaveBeenCalledOnce();
  });

  it("never runs once cancelled", () => {
    const run = vi.fn();
    const cancel = scheduleWithTimer(run, 1000);
    cancel();
    vi.advanceTimersByTime(5000);
    expect(run).not.toHaveBeenCalled();
    expect(vi.getTimerCount()).toBe(0);
  });
});
