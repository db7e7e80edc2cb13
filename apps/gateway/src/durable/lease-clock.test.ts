import { describe, expect, it } from "vitest";
import { PostgresDatabase } from "../postgres/database.js";
import { LeaseClock } from "./lease-clock.js";

/** Never connected: these tests read a server clock of their own. */
const unused = new PostgresDatabase({ url: "postgres://mediagate@127.0.0.1:1/unused" });

/**
 * A local clock moved by hand, and a server whose clock is `serverAheadMs` ahead of it; each
 * reading takes `roundTripMs` of local time, the server answering halfway.
 */
function world(serverAheadMs: number) {
  const state = { localMs: 1_000, serverAheadMs, roundTripMs: 4, readings: 0 };
  const readServerMs = async (): Promise<number> => {
    state.readings++;
    state.localMs += state.roundTripMs / 2;
    const server = state.localMs + state.serverAheadMs;
    state.localMs += state.roundTripMs / 2;
    return server;
  };
  return { state, localMs: () => state.localMs, readServerMs };
}

/** A clock of `w`: read again every minute, readings over 500 ms of round trip refused. */
function clockIn(w: ReturnType<typeof world>): Promise<LeaseClock> {
  return LeaseClock.open(unused, {
    localMs: w.localMs,
    resyncMs: 60_000,
    maxRoundTripMs: 500,
    readServerMs: w.readServerMs,
  });
}

describe("LeaseClock", () => {
  it("reads the server's time as the midpoint of the round trip", async () => {
    const w = world(1_700_000_000_000);
    const clock = await clockIn(w);
    expect(w.state.readings).toBe(3);
    expect(clock.sharedMs()).toBe(w.state.localMs + 1_700_000_000_000);
    w.state.localMs += 5_000;
    expect(clock.sharedMs()).toBe(w.state.localMs + 1_700_000_000_000);
    expect(clock.localMs()).toBe(w.state.localMs);
  });

  it("follows a step of the server's clock at the next resync, not before", async () => {
    const w = world(0);
    const clock = await clockIn(w);
    w.state.serverAheadMs = 30_000;
    w.state.localMs += 59_000;
    await clock.resyncWhenDue();
    expect(w.state.readings).toBe(3);
    expect(clock.sharedMs()).toBe(w.state.localMs);
    w.state.localMs += 1_000;
    await clock.resyncWhenDue();
    expect(w.state.readings).toBe(6);
    expect(clock.sharedMs()).toBe(w.state.localMs + 30_000);
  });

  it("keeps its reading when a new one took longer than maxRoundTripMs", async () => {
    const w = world(0);
    const clock = await clockIn(w);
    // A congested link: the server's answer is 3 s late, its time known only within 1.5 s.
    w.state.roundTripMs = 3_000;
    w.state.serverAheadMs = 10_000;
    w.state.localMs += 60_000;
    await clock.resyncWhenDue();
    expect(clock.sharedMs()).toBe(w.state.localMs);
    // Not read again until the next resync is due.
    const readings = w.state.readings;
    await clock.resyncWhenDue();
    expect(w.state.readings).toBe(readings);
  });
});
