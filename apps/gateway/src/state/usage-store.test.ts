import { beforeEach, describe, expect, it } from "vitest";
import { StateBackends, useStateBackend } from "../../test/fixtures/state-backends.js";
import type { StateStore } from "./state-store.js";
import { NoUsage, type UsageRecord, usageDays } from "./usage.js";

const day = 86_400_000;
const start = Date.UTC(2026, 0, 10, 12);

const call = (overrides: Partial<UsageRecord> = {}): UsageRecord => ({
  sessionKey: "k1",
  sessionId: "s1",
  user: "telegram:1",
  model: "small",
  inputTokens: 100,
  outputTokens: 10,
  cachedTokens: 5,
  cost: 0.25,
  ...overrides,
});

describe.each(StateBackends)("usage and model picks in the state store on %s", (kind) => {
  const backend = useStateBackend(kind, "usage");
  let nowMs = start;
  let store: StateStore;

  beforeEach(async () => {
    nowMs = start;
    store = await backend.open({ now: () => nowMs });
  });

  it("sums today, the week and all time per scope, and each day", async () => {
    nowMs = start - 10 * day;
    await store.recordUsage(call());
    nowMs = start - 2 * day;
    await store.recordUsage(call({ user: "discord:2", sessionKey: "k2", cost: 1 }));
    nowMs = start;
    await store.recordUsage(call());
    await store.recordUsage(call({ user: undefined, inputTokens: 1, outputTokens: 1 }));
    const days = usageDays(start, 7);

    const profile = await store.usagePeriods({ kind: "profile" }, days);
    expect(profile.today).toEqual({
      calls: 2,
      inputTokens: 101,
      outputTokens: 11,
      cachedTokens: 10,
      cost: 0.5,
    });
    expect(profile.week.calls).toBe(3);
    expect(profile.all.calls).toBe(4);
    const session = await store.usagePeriods({ kind: "session", sessionKey: "k2" }, days);
    expect(session.all).toEqual({
      calls: 1,
      inputTokens: 100,
      outputTokens: 10,
      cachedTokens: 5,
      cost: 1,
    });
    const nobody = await store.usagePeriods({ kind: "user", user: "telegram:9" }, days);
    expect(nobody).toEqual({ today: NoUsage, week: NoUsage, all: NoUsage });

    expect(await store.usageOfDay("2026-01-10")).toEqual({
      calls: 2,
      inputTokens: 101,
      outputTokens: 11,
      cachedTokens: 10,
      cost: 0.5,
    });
    expect(await store.usageOfDay("2025-01-01")).toEqual(NoUsage);
    expect((await store.usageDaily("2026-01-05")).map((d) => [d.day, d.calls])).toEqual([
      ["2026-01-08", 1],
      ["2026-01-10", 2],
    ]);
  });

  it("ranks users by cost, then tokens, the unknown ones together", async () => {
    await store.recordUsage(call({ user: "telegram:1", cost: 0.5 }));
    await store.recordUsage(call({ user: "discord:2", cost: 2 }));
    await store.recordUsage(call({ user: undefined, cost: 0.5, inputTokens: 1000 }));
    const users = await store.usageByUser(usageDays(nowMs, 7));
    expect(users.map((u) => [u.user, u.all.calls, u.today.cost])).toEqual([
      ["discord:2", 1, 2],
      ["unknown", 1, 0.5],
      ["telegram:1", 1, 0.5],
    ]);
  });

  it("keeps a session's model pick until it is set back to the default", async () => {
    expect(await store.sessionModel("k1")).toBeUndefined();
    await store.setSessionModel("k1", "large");
    await store.setSessionModel("k1", "medium");
    expect(await store.sessionModel("k1")).toBe("medium");
    expect(await store.sessionModel("k2")).toBeUndefined();
    await store.setSessionModel("k1", undefined);
    expect(await store.sessionModel("k1")).toBeUndefined();
  });
});
