import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { PostgresDatabase } from "../postgres/database.js";
import { type LiveInstanceOf, SlotLeases } from "./slot-leases.js";

let testDatabase: TestDatabase;
const databases: PostgresDatabase[] = [];

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("pg_slot_leases");
});

afterEach(async () => {
  const admin = databases[0];
  await admin?.query("test", "TRUNCATE leases.slots, leases.slot_notices");
  for (const database of databases.splice(0)) await database.close();
});

afterAll(async () => {
  await testDatabase?.drop();
});

const time = { nowMs: 1_000_000 };
const now = () => time.nowMs;

async function replica(replicaId: string, sharedFiles: boolean, pid = 1) {
  const database = new PostgresDatabase({ url: testDatabase.url, maxConnections: 2 });
  databases.push(database);
  return SlotLeases.open(database, {
    replicaId,
    sharedFiles,
    owner: `${replicaId}/1/${pid}/1`,
    now,
    // One timeline for every replica here: the server's clock reads as the test's.
    readServerMs: async () => now(),
    leaseMs: 10_000,
    marginMs: 2_000,
  });
}

/** The registry's answer: which replica ids run now, and as which process. */
function registry(live: Record<string, string>): LiveInstanceOf {
  return async (replicaId) => live[replicaId];
}

const slot = "work/profile:work";

describe("SlotLeases", () => {
  it("pins a slot to one replica and tells the other who holds it", async () => {
    const [a, b] = await Promise.all([replica("a", true), replica("b", true)]);
    const nobody = registry({});
    const claims = await Promise.all([a.claim(slot, nobody), b.claim(slot, nobody)]);
    expect(claims.filter((claim) => claim.held)).toHaveLength(1);
    const winner = claims[0]?.held === true ? a : b;
    expect(claims.find((claim) => !claim.held)).toEqual({ held: false, holder: winner.owner });
  });

  it("moves a dead holder's pin with its files when they are shared, telling nobody", async () => {
    const [a, b] = await Promise.all([replica("a", true), replica("b", true)]);
    expect(await a.claim(slot, registry({}))).toEqual({ held: true, token: 1 });
    time.nowMs += 10_000;
    expect(await b.claim(slot, registry({}))).toEqual({ held: true, token: 2 });
    expect(await a.renew()).toEqual([slot]);
    expect(a.holds(slot)).toBe(false);
  });

  it("keeps a live holder's pin however long it renews", async () => {
    const [a, b] = await Promise.all([replica("a", true), replica("b", true)]);
    await a.claim(slot, registry({}));
    for (let i = 0; i < 5; i++) {
      time.nowMs += 5_000;
      expect(await a.renew()).toEqual([]);
    }
    expect(await b.claim(slot, registry({}))).toEqual({ held: false, holder: a.owner });
  });

  it("gives a free pin back to its home while that replica runs, when files are not shared", async () => {
    const [a, b] = await Promise.all([replica("a", false), replica("b", false)]);
    await a.claim(slot, registry({}));
    await a.release(slot);
    expect(await b.claim(slot, registry({ a: a.owner }))).toEqual({
      held: false,
      holder: a.owner,
    });
    // A restarted home is found under its new process.
    expect(await b.claim(slot, registry({ a: "a/1/9/1" }))).toEqual({
      held: false,
      holder: "a/1/9/1",
    });
  });

  it("moves the pin off a dead home and records the files left there, once per chat", async () => {
    const [a, b] = await Promise.all([replica("a", false), replica("b", false)]);
    expect(await a.claim(slot, registry({}))).toEqual({ held: true, token: 1 });
    time.nowMs += 10_000;
    const moved = await b.claim(slot, registry({}));
    expect(moved).toEqual({ held: true, token: 2, moved: { from: "a", token: 2 } });
    expect(await b.tellOnce(slot, "telegram:dm:1", 2)).toBe(true);
    expect(await b.tellOnce(slot, "telegram:dm:1", 2)).toBe(false);
    expect(await b.tellOnce(slot, "telegram:dm:2", 2)).toBe(true);
    // a comes back with the same id: the pin stays with b, whose copy is the latest.
    const back = await replica("a", false, 2);
    expect(await back.claim(slot, registry({ a: back.owner, b: b.owner }))).toEqual({
      held: false,
      holder: b.owner,
    });
    await b.release(slot);
    expect(await back.claim(slot, registry({ a: back.owner, b: b.owner }))).toEqual({
      held: false,
      holder: b.owner,
    });
  });

  it("records a move back to the old home as a move of its own", async () => {
    const [a, b] = await Promise.all([replica("a", false), replica("b", false)]);
    await a.claim(slot, registry({}));
    time.nowMs += 10_000;
    await b.claim(slot, registry({}));
    time.nowMs += 10_000;
    expect(await a.claim(slot, registry({ a: a.owner }))).toEqual({
      held: true,
      token: 3,
      moved: { from: "b", token: 3 },
    });
  });

  it("releases every pin on a graceful stop so another replica takes it at once", async () => {
    const [a, b] = await Promise.all([replica("a", true), replica("b", true)]);
    await a.claim(slot, registry({}));
    await a.claim("shared:team", registry({}));
    expect(await a.releaseAll()).toBe(2);
    expect(await b.claim("shared:team", registry({}))).toEqual({ held: true, token: 2 });
  });
});
