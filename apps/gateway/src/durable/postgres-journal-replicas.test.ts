import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { Defaults } from "../defaults.js";
import { PostgresDatabase } from "../postgres/database.js";
import { StorageError } from "./errors.js";
import { PostgresJournal } from "./postgres-journal.js";
import { SessionLeaseLostError, SessionLeases } from "./session-leases.js";

let testDatabase: TestDatabase;
const databases: PostgresDatabase[] = [];
const journals: PostgresJournal[] = [];

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("pg_replicas");
});

afterEach(async () => {
  // What one test's closed journals left would be the next one's to take over.
  await databases[0]?.query(
    "test",
    "TRUNCATE journal.entries, journal.receipts, journal.replies, journal.reply_steps, leases.sessions",
  );
  for (const journal of journals.splice(0)) await journal.close();
  for (const database of databases.splice(0)) await database.close();
});

afterAll(async () => {
  await testDatabase?.drop();
});

/** A replica's journal: a pool of its own and an owner of its own, as another process has. */
async function replica(owner: string): Promise<PostgresJournal> {
  return (await leasedReplica(owner)).journal;
}

/**
 * A replica's journal whose replies are fenced by its session leases, on the clock `now`. The
 * server's clock reads as `now` too: a replica's clock ahead here is time passed for it alone
 * (session-leases.test.ts reads the real server's clock for skew).
 */
async function leasedReplica(owner: string, now: () => number = Date.now) {
  const database = new PostgresDatabase({ url: testDatabase.url, maxConnections: 4 });
  databases.push(database);
  const leases = await SessionLeases.open(database, {
    owner,
    now,
    readServerMs: async () => now(),
  });
  const journal = await PostgresJournal.open(database, {
    owner,
    ownerGraceMs: 0,
    now,
    fence: leases,
  });
  journals.push(journal);
  return { journal, leases };
}

function reply(sessionKey: string) {
  return {
    profile: "work",
    platform: "telegram" as const,
    sessionKey,
    slot: "s",
    target: { platform: "telegram" as const, chatId: "100" },
    text: "the answer",
  };
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
    expect(await b.entryState(first.id)).toMatchObject({ state: "done", outcome: "replied" });
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

  it("refuses the reply of a replica whose session another replica took over", async () => {
    const clock = { nowMs: 5_000_000 };
    const a = await leasedReplica("replica-a/4/1/1", () => clock.nowMs);
    const session = { profile: "work", sessionKey: "telegram:dm:7" };
    const entry = await a.journal.record(telegramMessage("fenced-1"));
    expect(await a.leases.claim(session)).toMatchObject({ held: true });
    await a.journal.started(entry.id);
    // a is cut off past its lease; b, whose clock is later, takes the session over.
    const b = await leasedReplica("replica-b/4/1/1", () => clock.nowMs + 20_000);
    expect(await b.leases.claim(session)).toMatchObject({ held: true, token: 2 });
    const refused = await a.journal
      .addReply(reply(session.sessionKey), entry.id)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StorageError);
    expect((refused as StorageError).cause).toBeInstanceOf(SessionLeaseLostError);
    expect(await b.journal.replies({})).toEqual([]);
    // The entry is still a's: b's pick-up of kept turns (recovery.ts) leaves it alone.
    expect(await a.journal.entryState(entry.id)).toMatchObject({ mine: true });
    expect(await b.journal.entryState(entry.id)).toMatchObject({
      state: "started",
      outcome: null,
      mine: false,
    });
    // The new holder's reply goes through.
    await b.journal.addReply(reply(session.sessionKey), entry.id);
    expect(await b.journal.entryState(entry.id)).toMatchObject({
      state: "done",
      outcome: "replied",
    });
  });

  it("refuses to start a turn once its lease lapsed by its own clock", async () => {
    const clock = { nowMs: 5_000_000 };
    const a = await leasedReplica("replica-a/6/1/1", () => clock.nowMs);
    const session = { profile: "work", sessionKey: "telegram:dm:8" };
    const entry = await a.journal.record(telegramMessage("start-fenced-1"));
    expect(await a.leases.claim(session)).toMatchObject({ held: true });
    // Cut off from the database past the lease less its margin: nobody took it over yet.
    clock.nowMs += Defaults.sessionLeases.leaseMs - Defaults.sessionLeases.marginMs;
    const refused = await a.journal.started(entry.id, session).catch((error: unknown) => error);
    expect((refused as StorageError).cause).toBeInstanceOf(SessionLeaseLostError);
    expect(await a.journal.entryState(entry.id)).toMatchObject({ state: "received" });
  });

  it("refuses to start a turn whose lease token another replica moved on", async () => {
    const clock = { nowMs: 5_000_000 };
    const a = await leasedReplica("replica-a/7/1/1", () => clock.nowMs);
    const session = { profile: "work", sessionKey: "telegram:dm:9" };
    const entry = await a.journal.record(telegramMessage("start-fenced-2"));
    expect(await a.leases.claim(session)).toMatchObject({ held: true, token: 1 });
    // b's clock runs ahead: by a's clock the lease still holds, on the database it moved on.
    const b = await leasedReplica("replica-b/7/1/1", () => clock.nowMs + 20_000);
    expect(await b.leases.claim(session)).toMatchObject({ held: true, token: 2 });
    expect(a.leases.holds(session)).toBe(true);
    const refused = await a.journal.started(entry.id, session).catch((error: unknown) => error);
    expect((refused as StorageError).cause).toBeInstanceOf(SessionLeaseLostError);
    expect(await a.journal.entryState(entry.id)).toMatchObject({ state: "received" });
    // The holder starts it.
    await b.journal.started(entry.id, session);
    expect(await b.journal.entryState(entry.id)).toMatchObject({ state: "started" });
  });

  it("starts a turn without a session's lease on a journal with no leases (one process)", async () => {
    const journal = await replica("replica-a/8/1/1");
    const entry = await journal.record(telegramMessage("unleased-1"));
    await journal.started(entry.id, { profile: "work", sessionKey: "telegram:dm:10" });
    expect(await journal.entryState(entry.id)).toMatchObject({ state: "started" });
  });

  it("stops sending a reply whose session's lease it lost and gives it to the cluster", async () => {
    const clock = { nowMs: 5_000_000 };
    const a = await leasedReplica("replica-a/9/1/1", () => clock.nowMs);
    const session = { profile: "work", sessionKey: "telegram:dm:11" };
    const entry = await a.journal.record(telegramMessage("reply-fenced-1"));
    await a.leases.claim(session);
    const record = await a.journal.addReply(reply(session.sessionKey), entry.id);
    await a.journal.fenceReply(record.id);
    await a.journal.step(record.id, "text:0", "sending");
    // a is cut off past its lease; b takes the session over.
    clock.nowMs += Defaults.sessionLeases.leaseMs;
    const b = await leasedReplica("replica-b/9/1/1", () => clock.nowMs + 1);
    expect(await b.leases.claim(session)).toMatchObject({ held: true, token: 2 });
    for (const refused of [
      await a.journal.fenceReply(record.id).catch((error: unknown) => error),
      await a.journal.step(record.id, "text:1", "sending").catch((error: unknown) => error),
    ]) {
      expect((refused as StorageError).cause).toBeInstanceOf(SessionLeaseLostError);
    }
    // The refused step was not written; the reply is the cluster's, taken over with its steps.
    const taken = await b.journal.takeOverReplies();
    expect(taken.map((r) => [r.id, r.owner, [...r.steps.keys()]])).toEqual([
      [record.id, b.journal.owner, ["text:0"]],
    ]);
    // Taken over, it is the taker's to send: no lease of its own fences it.
    await b.journal.fenceReply(record.id);
    await b.journal.step(record.id, "text:1", "sending");
  });

  it("keeps sending its own reply once it released an idle session's lease", async () => {
    const a = await leasedReplica("replica-a/10/1/1");
    const session = { profile: "work", sessionKey: "telegram:dm:12" };
    await a.leases.claim(session);
    const record = await a.journal.addReply(reply(session.sessionKey), undefined);
    await a.leases.release(session);
    await a.journal.fenceReply(record.id);
    await a.journal.step(record.id, "text:0", "sent");
  });

  it("hands a message to the replica holding its session, and to a taker once that one dies", async () => {
    const [a, holder, c] = await Promise.all([
      replica("replica-a/5/1/1"),
      replica("replica-b/5/1/1"),
      replica("replica-c/5/1/1"),
    ]);
    const first = await a.record(telegramMessage("handed-1"));
    const second = await a.record(telegramMessage("handed-2"));
    expect(await a.handOver([first.id], holder.owner)).toEqual([first.id]);
    // One a took over from the journal (accepted before): the holder does not cap it.
    expect(await a.handOver([second.id], holder.owner, true)).toEqual([second.id]);
    expect(await c.takeOver()).toEqual([]);
    const picked = await holder.takeHandedOver();
    expect(picked.map((entry) => [entry.id, entry.owner, entry.handed])).toEqual([
      [first.id, holder.owner, true],
      [second.id, holder.owner, undefined],
    ]);
    expect(await holder.takeHandedOver()).toEqual([]);

    const third = await a.record(telegramMessage("handed-3"));
    await a.handOver([third.id], holder.owner);
    await holder.close();
    // The holder died before it picked the message up: whoever takes its work over gets it.
    const taken = await c.takeOver();
    expect(taken.map((entry) => entry.id)).toEqual([first.id, second.id, third.id]);
  });

  it("never closes, nor marks a status on, an entry it gave back once another replica took it", async () => {
    const [a, b] = await Promise.all([replica("replica-a/1/1/1"), replica("replica-b/1/1/1")]);
    const entry = await a.record(telegramMessage("stale", "long"));
    await a.started(entry.id);
    // a's lease lapsed: it gives the turn's entry back; b takes it over and runs it again.
    await a.releaseEntries([entry.id]);
    expect((await b.takeOver()).map((taken) => taken.id)).toEqual([entry.id]);
    await b.statusShown(entry.id, {
      target: { platform: "telegram", chatId: "100" },
      messageId: "b-status",
    });
    // a's late writes of the turn it lost change nothing.
    await a.finished(entry.id, "failed");
    await a.statusShown(entry.id, {
      target: { platform: "telegram", chatId: "100" },
      messageId: "a-status",
    });
    await a.previewsShown(entry.id, ["a-preview"]);
    expect(await b.entryState(entry.id)).toEqual({ state: "started", outcome: null, mine: true });
    const status = await databases[0]?.query<{ status: string; previews: string | null }>(
      "test",
      "SELECT status, previews FROM journal.entries WHERE id = $1",
      [entry.id],
    );
    expect(JSON.parse(status?.rows[0]?.status ?? "{}")).toMatchObject({ messageId: "b-status" });
    expect(status?.rows[0]?.previews).toBeNull();
    // Its holder closes it.
    await b.finished(entry.id, "failed");
    expect(await b.entryState(entry.id)).toMatchObject({ state: "done", outcome: "failed" });
  });
});
