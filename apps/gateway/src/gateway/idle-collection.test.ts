import type { Clock } from "@mediagate/io";
import { afterEach, describe, expect, it, vi } from "vitest";
import { fullCollection, IdleCollection } from "./idle-collection.js";

/** A clock the test moves. */
function steppedClock(): Clock & { advance(ms: number): void } {
  let now = 1_000;
  return {
    wallMs: () => now,
    monoMs: () => now,
    advance: (ms) => {
      now += ms;
    },
  };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("IdleCollection", () => {
  it("collects once a quiet spell follows messages, and not again until messages come", () => {
    const clock = steppedClock();
    let collected = 0;
    const idle = new IdleCollection({ quietMs: 30_000, collect: () => collected++, clock });

    clock.advance(60_000);
    expect(idle.check()).toBe(false); // no message yet: nothing to give back
    idle.touch();
    clock.advance(29_999);
    expect(idle.check()).toBe(false);
    idle.touch(); // the spell starts again
    clock.advance(29_999);
    expect(idle.check()).toBe(false);
    clock.advance(1);
    expect(idle.check()).toBe(true);
    expect(collected).toBe(1);

    clock.advance(120_000);
    expect(idle.check()).toBe(false);
    expect(collected).toBe(1);
    idle.touch();
    clock.advance(30_000);
    expect(idle.check()).toBe(true);
    expect(collected).toBe(2);
  });

  it("never collects without a collection to run", () => {
    const clock = steppedClock();
    const idle = new IdleCollection({ quietMs: 1_000, collect: undefined, clock });
    idle.touch();
    clock.advance(5_000);
    expect(idle.check()).toBe(false);
  });

  it("checks on its own timer while started, and stops with stop()", () => {
    vi.useFakeTimers();
    const clock: Clock = { wallMs: () => Date.now(), monoMs: () => Date.now() };
    let collected = 0;
    const idle = new IdleCollection({ quietMs: 30_000, collect: () => collected++, clock });
    idle.start();
    idle.touch();
    vi.advanceTimersByTime(29_000);
    expect(collected).toBe(0);
    vi.advanceTimersByTime(10_000); // the next check after the spell: every 7.5 s
    expect(collected).toBe(1);
    idle.touch();
    idle.stop();
    vi.advanceTimersByTime(120_000);
    expect(collected).toBe(1);
  });
});

describe("fullCollection", () => {
  it("collects an object nothing holds any more", async () => {
    const collect = fullCollection();
    expect(collect).toBeTypeOf("function");
    const ref = (() => new WeakRef({ payload: "x".repeat(1_000) }))();
    // A weak reference's target stays at least until the job that made it ends.
    await new Promise((resolve) => setImmediate(resolve));
    collect?.();
    await new Promise((resolve) => setImmediate(resolve));
    expect(ref.deref()).toBeUndefined();
  });
});
