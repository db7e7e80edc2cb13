import { describe, expect, it } from "vitest";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { silentLogger } from "../log.js";
import type { KeptTurn } from "../pipeline/types.js";
import { KeptTurns } from "./kept-turns.js";

/** Kept turns over a store that answers when `up` says, with timers fired by hand. */
function harness() {
  const timers: { run: () => void; delayMs: number; cancelled: boolean }[] = [];
  const state = { up: false, probes: 0, failResume: false };
  const resumed: number[] = [];
  const kept = new KeptTurns({
    probe: async () => {
      state.probes += 1;
      if (!state.up) throw new Error("connection refused");
    },
    resume: async (turn) => {
      if (state.failResume) throw new Error("the journal did not answer");
      resumed.push(turn.entryId);
    },
    backoff: { baseMs: 1_000, maxMs: 4_000 },
    schedule: (run, delayMs) => {
      const timer = { run, delayMs, cancelled: false };
      timers.push(timer);
      return () => {
        timer.cancelled = true;
      };
    },
    logger: silentLogger(),
  });
  /** Fires the one pending timer and lets the probe settle; its delay. */
  const fire = async () => {
    const pending = timers.filter((t) => !t.cancelled);
    expect(pending).toHaveLength(1);
    const timer = pending[0]!;
    timer.cancelled = true;
    timer.run();
    for (let i = 0; i < 10; i++) await Promise.resolve();
    return timer.delayMs;
  };
  return { kept, state, resumed, timers, fire };
}

const turn = (entryId: number): KeptTurn => ({
  message: telegramMessage(String(entryId), "sleep 3; echo running"),
  entryId,
  mergedEntryIds: [],
  commandMayHaveRun: false,
});

describe("KeptTurns", () => {
  it("probes with a doubling wait while the store is down, then hands each turn on once", async () => {
    const { kept, state, resumed, fire } = harness();
    kept.add(turn(1));
    kept.add(turn(2));
    expect(await fire()).toBe(1_000);
    expect(await fire()).toBe(2_000);
    expect(await fire()).toBe(4_000);
    expect(resumed).toEqual([]);
    state.up = true;
    expect(await fire()).toBe(4_000);
    expect(resumed).toEqual([1, 2]);
    expect(kept.size).toBe(0);
  });

  it("keeps a turn whose hand-on failed, and tries it again at the next probe", async () => {
    const { kept, state, resumed, fire, timers } = harness();
    state.up = true;
    state.failResume = true;
    kept.add(turn(5));
    await fire();
    expect(kept.size).toBe(1);
    state.failResume = false;
    await fire();
    expect(resumed).toEqual([5]);
    expect(timers.filter((t) => !t.cancelled)).toEqual([]);
  });

  it("goes on at once when a write succeeds, and stops probing at the gateway's stop", async () => {
    const { kept, state, resumed, timers } = harness();
    kept.add(turn(7));
    state.up = true;
    kept.storeAnswered();
    for (let i = 0; i < 10; i++) await Promise.resolve();
    expect(resumed).toEqual([7]);
    expect(timers.every((t) => t.cancelled)).toBe(true);

    state.up = false;
    kept.add(turn(8));
    kept.stop();
    expect(timers.every((t) => t.cancelled)).toBe(true);
    kept.add(turn(9));
    kept.storeAnswered();
    expect(state.probes).toBe(1);
    expect(resumed).toEqual([7]);
  });
});
