import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { PostgresDatabase } from "../postgres/database.js";
import { PostgresJournal } from "./postgres-journal.js";

let testDatabase: TestDatabase;
const databases: PostgresDatabase[] = [];
const journals: PostgresJournal[] = [];

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("pg_replicas");
});

afterEach(async () => {
  for (const journal of journals.splice(0)) await journal.close();
  for (const database of databases.splice(0)) await database.close();
});

afterAll(async () => {
  await testDatabase?.drop();
});

/** A replica's journal: a pool of its own and an owner of its own, as another process has. */
async function replica(owner: string): Promise<PostgresJournal> {
  const database = new PostgresDatabase({ url: testDatabase.url, maxConnections: 4 });
  databases.push(database);
  const journal = await PostgresJournal.open(database, { owner, ownerGraceMs: 0 });
  journals.push(journal);
  return journal;
}

describe("PostgresJournal shared by replicas", () => {
  it("accepts an update once when two replicas record it at the same moment", async () => {
    const [a, b] = await Promise.all([replica("replica-a/1/1/1"), replica("replica-b/1/1/1")]);
    const updates = Array.from({ length: 40 }, (_, i) => telegramMessage(`race-${i}`, `m${i}`));
    const results = await Promise.all(
      updates.map(async (update, i) => {
        // Each replica goes first for half of them.
        const [first, second] = i % 2 === 0 ? [a, b] : [b, a];
        const both = await Promise.all([first.record(update), second.record(update)]);
        return first === a ? both : ([both[1], both[0]] as const);
      }),
    );
    for (const [fromA, fromB] of results) {
      expect([fromA.fresh, fromB.fresh].filter(Boolean)).toHaveLength(1);
      expect(fromA.id).toBe(fromB.id);
    }
    // Both replicas won some: the race was real, not one replica always first.
    const wonByA = results.filter(([fromA]) => fromA.fresh).length;
    expect(wonByA).toBeGreaterThan(0);
    expect(new Set(results.map(([fromA]) => fromA.id)).size).toBe(updates.length);
  });

  it("does not run a platform's retry on another replica once one recorded the update", async () => {
    const [a, b, c] = await Promise.all([
      replica("replica-a/2/1/1"),
      replica("replica-b/2/1/1"),
      replica("replica-c/2/1/1"),
    ]);
    const update = telegramMessage("retried-1");
    const first = await a.record(update);
    await a.started(first.id);
    await a.finished(first.id, "replied");
    // Telegram did not hear the 200 and delivers the update again, to whichever replica the
    // load balancer picks, twice at once.
    const [onB, onC] = await Promise.all([b.record(update), c.record(update)]);
    expect(first.fresh).toBe(true);
    expect(onB).toEqual({ id: first.id, fresh: false });
    expect(onC).toEqual({ id: first.id, fresh: false });
    expect(await b.entryState(first.id)).toEqual({ state: "done", outcome: "replied" });
  });

  it("records an album item once when replicas receive it alone and merged with others", async () => {
    const [a, b] = await Promise.all([replica("replica-a/3/1/1"), replica("replica-b/3/1/1")]);
    const alone = telegramMessage("album-2");
    const merged = { ...telegramMessage("album-1"), receiptIds: ["album-1", "album-2"] };
    const [fromA, fromB] = await Promise.all([a.record(alone), b.record(merged)]);
    const fresh = [fromA, fromB].filter((result) => result.fresh);
    expect(fresh).toHaveLength(1);
    // The loser is told which receipts were not recorded with the winner, or that it was seen.
    const loser = fromA.fresh ? fromB : fromA;
    expect(loser.fresh).toBe(false);
    expect(await a.recorded("work", "telegram", ["album-2"])).toEqual(["album-2"]);
  });
});
