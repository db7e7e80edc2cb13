import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { Defaults } from "../defaults.js";
import { PostgresDatabase } from "../postgres/database.js";
import { SessionLeaseLostError, SessionLeases } from "./session-leases.js";

let testDatabase: TestDatabase;
const databases: PostgresDatabase[] = [];

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("pg_leases");
});

afterEach(async () => {
  const admin = databases[0];
  await admin?.query("test", "TRUNCATE leases.sessions, leases.requests");
  for (const database of databases.splice(0)) await database.close();
});

afterAll(async () => {
  await testDatabase?.drop();
});

/** One replica's clock, moved by hand. */
function clock(startMs = 1_000_000) {
  const state = { nowMs: startMs };
  return { state, now: () => state.nowMs };
}

/**
 * One replica on clock `now`. Unless `realServer`, the server's clock reads as `now` too, so
 * the tests of what leases do run on one timeline (a replica's clock ahead is time passed for
 * it alone); the clock tests read the real server's.
 */
async function replica(owner: string, now: () => number, realServer = false) {
  const database = new PostgresDatabase({ url: testDatabase.url, maxConnections: 2 });
  databases.push(database);
  const leases = await SessionLeases.open(database, {
    owner,
    now,
    ...(realServer ? {} : { readServerMs: async () => now() }),
    leaseMs: 10_000,
    marginMs: 2_000,
  });
  return { leases, database };
}

const session = { profile: "work", sessionKey: "telegram:dm:7" };

/** The database server's clock, in epoch ms. */
async function serverMs(database: PostgresDatabase): Promise<number> {
  const row = await database.query<{ ms: number }>(
    "test",
    "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::float8 AS ms",
  );
  return Number(row.rows[0]?.ms);
}

describe("SessionLeases", () => {
  it("gives a free session to the first replica and tells the second who holds it", async () => {
    const time = clock();
    const [a, b] = await Promise.all([replica("a/1/1/1", time.now), replica("b/1/1/1", time.now)]);
    const claims = await Promise.all([a.leases.claim(session), b.leases.claim(session)]);
    const winners = claims.filter((claim) => claim.held);
    expect(winners).toHaveLength(1);
    const loser = claims.find((claim) => !claim.held);
    expect(loser).toMatchObject({ held: false, expiresAtMs: time.state.nowMs + 10_000 });
    const winner = claims[0]?.held === true ? a : b;
    expect(loser).toMatchObject({ holder: winner.leases.owner });
    expect(winner.leases.holds(session)).toBe(true);
  });

  it("names the holder of an unexpired lease, and nobody once it expired", async () => {
    const time = clock();
    const [a, b] = await Promise.all([replica("a/9/1/1", time.now), replica("b/9/1/1", time.now)]);
    expect(await b.leases.holder(session)).toBeUndefined();
    await a.leases.claim(session);
    expect(await b.leases.holder(session)).toBe("a/9/1/1");
    expect(await a.leases.holder(session)).toBe("a/9/1/1");
    time.state.nowMs += 10_000;
    expect(await b.leases.holder(session)).toBeUndefined();
  });

  it("keeps the session with its holder while it renews, however long", async () => {
    const time = clock();
    const [a, b] = await Promise.all([replica("a/2/1/1", time.now), replica("b/2/1/1", time.now)]);
    expect(await a.leases.claim(session)).toEqual({ held: true, token: 1 });
    for (let i = 0; i < 5; i++) {
      time.state.nowMs += 3_000;
      expect(await a.leases.renew()).toEqual([]);
      expect(await b.leases.claim(session)).toMatchObject({ held: false, holder: "a/2/1/1" });
    }
    expect(a.leases.holds(session)).toBe(true);
  });

  it("lets another replica take an expired lease with a bumped token, and the old holder learns it lost it", async () => {
    const time = clock();
    const [a, b] = await Promise.all([replica("a/3/1/1", time.now), replica("b/3/1/1", time.now)]);
    await a.leases.claim(session);
    time.state.nowMs += 9_999;
    expect(await b.leases.claim(session)).toMatchObject({ held: false });
    // The holder stopped acting at its margin, before anyone could take over.
    expect(a.leases.holds(session)).toBe(false);
    time.state.nowMs += 1;
    expect(await b.leases.claim(session)).toEqual({ held: true, token: 2 });
    expect(await a.leases.renew()).toEqual([session]);
    // A late write of the turn that held it is still refused, not let through unfenced.
    expect(a.leases.fenceOf(session)).toBe("lost");
    const late = await a.database
      .transaction("test", (tx) => a.leases.fence(tx, session, "addReply"))
      .catch((error: unknown) => error);
    expect(late).toBeInstanceOf(SessionLeaseLostError);
    expect(await a.leases.claim(session)).toMatchObject({ held: false, holder: "b/3/1/1" });
  });

  it("refuses a fenced write of a holder whose lease another replica took", async () => {
    const time = clock();
    const a = await replica("a/4/1/1", time.now);
    await a.leases.claim(session);
    // a's writes go through while it holds the lease.
    await a.database.transaction("test", (tx) => a.leases.fence(tx, session, "addReply"));
    // a's clock lags: it still believes it holds the session when b's clock says it expired.
    const late = clock(time.state.nowMs + 10_000);
    const b = await replica("b/4/1/1", late.now);
    expect(await b.leases.claim(session)).toEqual({ held: true, token: 2 });
    expect(a.leases.holds(session)).toBe(true);
    const refused = await a.database
      .transaction("test", (tx) => a.leases.fence(tx, session, "addReply"))
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SessionLeaseLostError);
    expect((refused as SessionLeaseLostError).code).toBe("MG_SESSION_LEASE_LOST");
    expect(a.leases.holds(session)).toBe(false);
    expect(b.leases.holds(session)).toBe(true);
  });

  it("refuses a fenced write once the holder's own clock says the lease may have expired", async () => {
    const time = clock();
    const { leases, database } = await replica("a/5/1/1", time.now);
    await leases.claim(session);
    time.state.nowMs += 8_000;
    const refused = await database
      .transaction("test", (tx) => leases.fence(tx, session, "addReply"))
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SessionLeaseLostError);
    expect(leases.lapsed()).toEqual([session]);
  });

  it("hands every session over at once when its holder releases them", async () => {
    const time = clock();
    const [a, b] = await Promise.all([replica("a/6/1/1", time.now), replica("b/6/1/1", time.now)]);
    const other = { profile: "work", sessionKey: "telegram:dm:8" };
    await a.leases.claim(session);
    await a.leases.claim(other);
    expect(await a.leases.releaseAll()).toBe(2);
    expect(await b.leases.claim(session)).toEqual({ held: true, token: 2 });
    expect(await b.leases.claim(other)).toEqual({ held: true, token: 2 });
    expect(a.leases.holds(session)).toBe(false);
  });

  it("lets its holder claim a session again without bumping the token", async () => {
    const time = clock();
    const { leases } = await replica("a/7/1/1", time.now);
    expect(await leases.claim(session)).toEqual({ held: true, token: 1 });
    time.state.nowMs += 5_000;
    expect(await leases.claim(session)).toEqual({ held: true, token: 1 });
    time.state.nowMs += 7_000;
    expect(leases.holds(session)).toBe(true);
  });

  it("judges leases on the database's clock, so a replica whose own clock is a minute ahead takes no live session", async () => {
    const [a, b] = await Promise.all([
      replica("a/10/1/1", clock(1_000_000).now, true),
      replica("b/10/1/1", clock(61_000_000).now, true),
    ]);
    const before = await serverMs(a.database);
    expect(await a.leases.claim(session)).toEqual({ held: true, token: 1 });
    const claim = await b.leases.claim(session);
    expect(claim).toMatchObject({ held: false, holder: "a/10/1/1" });
    // The expiry is the server's time plus the lease, whatever either replica's clock says.
    const { expiresAtMs } = claim as { expiresAtMs: number };
    expect(expiresAtMs).toBeGreaterThanOrEqual(before + 10_000 - 1_000);
    expect(expiresAtMs).toBeLessThanOrEqual((await serverMs(a.database)) + 10_000 + 1_000);
    expect(await b.leases.holder(session)).toBe("a/10/1/1");
    expect(await b.leases.ask(session, "stop")).toBe("a/10/1/1");
  });

  it("forgets the requests made of a replica that never took them once they expired", async () => {
    const time = clock();
    const [a, b, c] = await Promise.all([
      replica("a/8/1/1", time.now),
      replica("b/8/1/1", time.now),
      replica("c/8/1/1", time.now),
    ]);
    await a.leases.claim(session);
    // b asks a to stop the session; a dies before its next round.
    expect(await b.leases.ask(session, "stop")).toBe("a/8/1/1");
    const left = () => c.database.query("test", "SELECT holder FROM leases.requests");
    expect(await c.leases.requests()).toEqual([]);
    expect((await left()).rows).toEqual([{ holder: "a/8/1/1" }]);
    time.state.nowMs += Defaults.sessionLeases.requestExpiryMs + 1;
    expect(await c.leases.requests()).toEqual([]);
    expect((await left()).rows).toEqual([]);
  });
});
