import { getEventListeners } from "node:events";
import { describe, expect, it } from "vitest";
import { heldBy } from "../../../test-support/signals.js";
import { combinedSignal, stopController } from "./combined-signal.js";
import { sleep } from "./sleep.js";

describe("combinedSignal", () => {
  it("aborts with the reason of the first source that aborts", () => {
    const a = new AbortController();
    const b = new AbortController();
    const { signal } = combinedSignal([a.signal, b.signal]);
    expect(signal.aborted).toBe(false);
    b.abort(new Error("b stopped"));
    a.abort(new Error("a stopped"));
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe("b stopped");
  });

  it("is aborted at once when a source already is", () => {
    const a = new AbortController();
    a.abort(new Error("gone"));
    const { signal } = combinedSignal([new AbortController().signal, a.signal]);
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe("gone");
  });

  it("aborts with a timeout source's TimeoutError", async () => {
    const { signal } = combinedSignal([new AbortController().signal, AbortSignal.timeout(1)]);
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    expect((signal.reason as DOMException).name).toBe("TimeoutError");
  });

  it("leaves a long-lived source as it was once released, and no longer follows it", () => {
    const stop = new AbortController();
    const made: AbortSignal[] = [];
    for (let i = 0; i < 100; i++) {
      const combined = combinedSignal([stop.signal, AbortSignal.timeout(60_000)]);
      made.push(combined.signal);
      combined.release();
    }
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
    expect(heldBy(stop.signal)).toEqual({});
    stop.abort(new Error("stopping"));
    expect(made.every((signal) => !signal.aborted)).toBe(true);
  });

  it("holds a listener on each source only until released", () => {
    const stop = new AbortController();
    const combined = combinedSignal([stop.signal]);
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(1);
    combined.release();
    combined.release();
    expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
  });

  it("follows a long-lived source from any number of calls in flight without a leak warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      const stop = new AbortController();
      // A gateway's stop signal, combined with each of 50 requests running at once.
      const inFlight = Array.from({ length: 50 }, () =>
        combinedSignal([stop.signal, AbortSignal.timeout(60_000)]),
      );
      expect(getEventListeners(stop.signal, "abort")).toHaveLength(50);
      // Node emits its warnings on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).toEqual([]);
      for (const combined of inFlight) combined.release();
      expect(getEventListeners(stop.signal, "abort")).toHaveLength(0);
    } finally {
      process.off("warning", onWarning);
    }
  });
});

describe("stopController", () => {
  it("lets any number of operations in flight wait on its signal without a leak warning", async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error) => warnings.push(warning.name);
    process.on("warning", onWarning);
    try {
      for (const [controller, warned] of [
        [stopController(), []],
        [new AbortController(), ["MaxListenersExceededWarning"]],
      ] as const) {
        // A component's stop signal, passed to 20 retry waits running at once.
        const waits = Array.from({ length: 20 }, () => sleep(60_000, controller.signal));
        expect(getEventListeners(controller.signal, "abort")).toHaveLength(20);
        // Node emits its warnings on the next tick.
        await new Promise((resolve) => setImmediate(resolve));
        expect(warnings.splice(0)).toEqual(warned);
        controller.abort(new Error("stopping"));
        for (const wait of await Promise.allSettled(waits)) expect(wait.status).toBe("rejected");
        expect(getEventListeners(controller.signal, "abort")).toHaveLength(0);
      }
    } finally {
      process.off("warning", onWarning);
    }
  });
});
