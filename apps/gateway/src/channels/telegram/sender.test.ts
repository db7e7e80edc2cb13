import { getEventListeners } from "node:events";
import pino from "pino";
import { describe, expect, it } from "vitest";
import { Defaults } from "../../defaults.js";
import { resolveRetryOptions } from "../../delivery/retry.js";
import { TelegramCaller } from "./sender.js";

/** Signals `AbortSignal.any` recorded in `signal` as its dependants (Node 20 keeps them). */
function dependantsOf(signal: AbortSignal): number {
  const key = Object.getOwnPropertySymbols(signal).find(
    (symbol) => symbol.description === "kDependantSignals",
  );
  const set =
    key === undefined ? undefined : (signal as unknown as Record<symbol, Set<unknown>>)[key];
  return set?.size ?? 0;
}

const caller = new TelegramCaller("123:token", pino({ level: "silent" }), {
  requestTimeoutBaseMs: Defaults.telegram.requestTimeoutBaseMs,
  minUploadBytesPerSecond: 1,
  retry: resolveRetryOptions(),
  ambiguousSends: "at-most-once",
});

describe("TelegramCaller", () => {
  it("leaves the caller's long-lived signal as it was once each call ended", async () => {
    // The outbox passes its stop signal, which lives as long as the process, to every send:
    // each call's combination with its timeout must not stay recorded in it (issue 31).
    const stopping = new AbortController();
    const seen: AbortSignal[] = [];
    for (let i = 0; i < 50; i++) {
      await caller.call(
        "sendMessage",
        "42",
        async (signal) => {
          seen.push(signal);
          return true;
        },
        { signal: stopping.signal },
      );
    }
    expect(getEventListeners(stopping.signal, "abort")).toHaveLength(0);
    expect(dependantsOf(stopping.signal)).toBe(0);
    expect(seen.every((signal) => !signal.aborted)).toBe(true);
  });

  it("aborts a running call when the caller's signal aborts", async () => {
    const stopping = new AbortController();
    const call = caller.call(
      "sendMessage",
      "42",
      (signal) =>
        new Promise<never>((_, reject) => {
          signal.addEventListener("abort", () => reject(signal.reason), { once: true });
          stopping.abort(new Error("gateway stopping"));
        }),
      { signal: stopping.signal },
    );
    await expect(call).rejects.toMatchObject({ aborted: true });
  });
});
