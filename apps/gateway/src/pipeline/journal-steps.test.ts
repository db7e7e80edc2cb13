import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { freshPostgresDatabase, type TestDatabase } from "../../../../test-support/postgres.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { Defaults } from "../defaults.js";
import { PostgresJournal } from "../durable/postgres-journal.js";
import { SessionLeaseLostError, SessionLeases } from "../durable/session-leases.js";
import { PostgresDatabase } from "../postgres/database.js";
import { TurnQueue } from "../session/queue.js";
import { startEntry } from "./journal-steps.js";
import type { MessageContext } from "./types.js";

let testDatabase: TestDatabase;
let database: PostgresDatabase | undefined;
let journal: PostgresJournal | undefined;

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("journal_steps");
});

afterEach(async () => {
  await journal?.close();
  await database?.close();
});

afterAll(async () => {
  await testDatabase?.drop();
});

describe("startEntry on a replica", () => {
  it("cuts the whole turn off when its session's lease lapsed before its first command", async () => {
    const clock = { nowMs: 5_000_000 };
    const owner = "replica-a/1/1/1";
    database = new PostgresDatabase({ url: testDatabase.url });
    const now = () => clock.nowMs;
    const leases = await SessionLeases.open(database, { owner, now });
    journal = await PostgresJournal.open(database, { owner, ownerGraceMs: 0, now, fence: leases });
    const session = { profile: "work", sessionKey: "telegram:dm:1" };
    const entry = await journal.record(telegramMessage("start-1"));
    await leases.claim(session);
    const queue = new TurnQueue();
    const ctx = {
      entryId: entry.id,
      message: { profile: session.profile },
      session: { ...session, sessionId: "s1" },
      services: { journal, queue },
    } as unknown as MessageContext;

    let reason: unknown;
    await queue.enqueue(session.sessionKey, async (signal) => {
      // The turn waited for its model past the lease (its replica cut off from the database).
      clock.nowMs += Defaults.sessionLeases.leaseMs;
      await expect(startEntry(ctx)).rejects.toThrow(/starting the turn refused/);
      reason = signal.reason;
    });
    expect(reason).toBeInstanceOf(SessionLeaseLostError);
    expect(await journal.entryState(entry.id)).toMatchObject({ state: "received" });
  });
});
