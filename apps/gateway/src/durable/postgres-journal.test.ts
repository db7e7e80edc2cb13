import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import {
  controlPostgres,
  freshPostgresDatabase,
  type PrivatePostgres,
  startPrivatePostgres,
  type TestDatabase,
} from "../../../../test-support/postgres.js";
import { waitFor, waitUntil } from "../../../../test-support/wait.js";
import { commitCuttingProxy } from "../../test/fixtures/cutting-proxy.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { Defaults } from "../defaults.js";
import { PostgresDatabase, type PostgresSettings } from "../postgres/database.js";
import { PostgresSchemaError, PostgresStoreError } from "../postgres/errors.js";
import { StorageError } from "./errors.js";
import { PostgresJournal, type PostgresJournalOptions } from "./postgres-journal.js";
import { OwnerTakenError, ownerLockKey } from "./postgres-owner.js";
import type { JournalEntry } from "./types.js";

let testDatabase: TestDatabase;
const databases: PostgresDatabase[] = [];
const journals: PostgresJournal[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  testDatabase = await freshPostgresDatabase("pg_journal");
});

beforeEach(async () => {
  // Each test starts from an empty journal: what one test's closed journals left would be
  // the next one's to take over.
  const admin = database();
  const schema = await admin.query<{ present: boolean }>(
    "test",
    "SELECT to_regnamespace('journal') IS NOT NULL AS present",
  );
  if (schema.rows[0]?.present === true) {
    await admin.query(
      "test",
      "TRUNCATE journal.entries, journal.receipts, journal.cursors, journal.replies, journal.reply_steps",
    );
  }
});

afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  for (const journal of journals.splice(0)) await journal.close();
  for (const database of databases.splice(0)) await database.close();
});

afterAll(async () => {
  await testDatabase?.drop();
});

function database(settings: Partial<PostgresSettings> = {}, url = testDatabase.url) {
  const made = new PostgresDatabase({ url, maxConnections: 4, ...settings });
  databases.push(made);
  return made;
}

async function open(
  owner: string,
  on = database(),
  options: Partial<PostgresJournalOptions> = { ownerGraceMs: 0 },
): Promise<PostgresJournal> {
  const journal = await PostgresJournal.open(on, { owner, ...options });
  journals.push(journal);
  return journal;
}

/** A process of its own that holds `owner`'s lock, as a gateway does, until it is killed. */
async function processHolding(owner: string): Promise<ChildProcess> {
  const program = `
    import pg from "pg";
    const client = new pg.Client({ connectionString: process.env.URL });
    await client.connect();
    await client.query("SELECT pg_advisory_lock($1::bigint)", [process.env.KEY]);
    process.stdout.write("locked\\n");
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ["--input-type=module", "-e", program], {
    cwd: fileURLToPath(new URL("../..", import.meta.url)),
    env: { ...process.env, URL: testDatabase.url, KEY: ownerLockKey(owner) },
    stdio: ["ignore", "pipe", "inherit"],
  });
  children.push(child);
  const [line] = (await once(child.stdout!, "data")) as [Buffer];
  expect(line.toString()).toBe("locked\n");
  return child;
}

describe("PostgresJournal, beyond what both backends share", () => {
  it("takes over the entries of a process that was killed holding its lock, never while it lived", async () => {
    const before = await open("host-a/boot/100/1");
    const recorded: number[] = [];
    for (const id of ["1", "2", "3"]) recorded.push((await before.record(telegramMessage(id))).id);
    await before.close();
    const holder = await processHolding("host-a/boot/100/1");

    const me = await open("host-b/boot/200/1");
    expect(await me.takeOver()).toEqual([]);
    const refused = await PostgresJournal.open(database(), { owner: "host-a/boot/100/1" }).catch(
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(OwnerTakenError);
    expect((refused as OwnerTakenError).code).toBe("MG_JOURNAL_OWNER_TAKEN");

    holder.kill("SIGKILL");
    await once(holder, "exit");
    const taken: JournalEntry[] = [];
    await waitFor(async () => {
      taken.push(...(await me.takeOver()));
      expect(taken.map((entry) => entry.id)).toEqual(recorded);
    });
    expect(taken.every((entry) => entry.owner === "host-b/boot/200/1")).toBe(true);
  });

  it("shares one owner's lock among the journals of one process until the last one closes", async () => {
    const [first, second] = await Promise.all([open("host-s/boot/1/1"), open("host-s/boot/1/1")]);
    const entry = await first.record(telegramMessage("shared-1"));
    const other = await open("host-t/boot/1/1");
    await first.close();
    expect(await other.takeOver()).toEqual([]);
    await second.close();
    expect((await other.takeOver()).map((taken) => taken.id)).toEqual([entry.id]);
  });

  it("hands each entry of many gone owners to exactly one of four processes taking over at once", async () => {
    const gone = ["g/1/1/1", "g/1/2/1", "g/1/3/1", "g/1/4/1", "g/1/5/1"];
    let n = 0;
    for (const owner of gone) {
      const journal = await open(owner);
      for (let i = 0; i < 20; i++) await journal.record(telegramMessage(String(++n)));
      if (owner === "g/1/5/1") await journal.release();
      await journal.close();
    }
    const takers = await Promise.all(
      ["t/1/1/1", "t/1/2/1", "t/1/3/1", "t/1/4/1"].map((o) => open(o)),
    );
    const taken = await Promise.all(takers.map((taker) => taker.takeOver()));
    const ids = taken.flat().map((entry) => entry.id);
    expect(ids).toHaveLength(100);
    expect(new Set(ids).size).toBe(100);
    for (const [i, entries] of taken.entries()) {
      expect(entries.every((entry) => entry.owner === takers[i]?.owner)).toBe(true);
    }
  });

  it("fails a call that outlives the statement timeout with a StorageError, and serves the rest", async () => {
    const journal = await open("host-c/boot/1/1", database({ statementTimeoutMs: 300 }));
    const blocker = new pg.Client({ connectionString: testDatabase.url });
    await blocker.connect();
    try {
      await blocker.query("BEGIN");
      await blocker.query("LOCK TABLE journal.entries IN ACCESS EXCLUSIVE MODE");
      const failure = await journal.record(telegramMessage("timeout")).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(StorageError);
      expect((failure as StorageError).message).toMatch(
        /^journal PostgreSQL [^ ]+: record failed: canceling statement due to statement timeout; the message was not confirmed/,
      );
      expect((failure as StorageError).systemCode).toBe("57014");
      // Calls on other tables go on while the entries are locked.
      expect(await journal.cursors("work")).toEqual([]);
    } finally {
      await blocker.query("ROLLBACK");
      await blocker.end();
    }
    expect((await journal.record(telegramMessage("timeout"))).fresh).toBe(true);
  });

  it("runs a message whose record committed although the connection was lost before the answer", async () => {
    const proxy = await commitCuttingProxy(testDatabase.url, "INSERT INTO journal.entries");
    try {
      const journal = await open("host-g/boot/1/1", database({}, proxy.url));
      proxy.state.armed = true;
      const failed = await journal.record(telegramMessage("cut")).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(StorageError);
      expect(((failed as StorageError).cause as PostgresStoreError).unreachable).toBe(true);
      const committed = await database().query<{ id: string }>(
        "read",
        "SELECT id FROM journal.entries WHERE key = 'work:telegram:cut'",
      );
      const id = Number(committed.rows[0]?.id);
      expect(committed.rowCount).toBe(1);
      // Told it failed, the gateway did not run it: offered again, it is fresh, once.
      expect(await journal.record(telegramMessage("cut"))).toEqual({ id, fresh: true });
      expect(await journal.record(telegramMessage("cut"))).toEqual({ id, fresh: false });
      await journal.close();
    } finally {
      await proxy.close();
    }
  });

  it("runs a message whose record committed although its answer never came in time", async () => {
    const proxy = await commitCuttingProxy(testDatabase.url, "INSERT INTO journal.entries", {
      swallow: true,
    });
    try {
      const journal = await open("host-g/boot/1/2", database({ queryTimeoutMs: 500 }, proxy.url));
      proxy.state.armed = true;
      const failed = await journal.record(telegramMessage("unheard")).catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(StorageError);
      expect(((failed as StorageError).cause as PostgresStoreError).unreachable).toBe(true);
      const committed = await database().query<{ id: string }>(
        "read",
        "SELECT id FROM journal.entries WHERE key = 'work:telegram:unheard'",
      );
      expect(committed.rowCount).toBe(1);
      const id = Number(committed.rows[0]?.id);
      // Told it failed, the gateway did not run it: offered again, it is fresh, once.
      expect(await journal.record(telegramMessage("unheard"))).toEqual({ id, fresh: true });
      expect(await journal.record(telegramMessage("unheard"))).toEqual({ id, fresh: false });
      await journal.close();
    } finally {
      await proxy.close();
    }
  });

  it("flushes the server's log on sync when commits are not synchronous", async () => {
    const own = await freshPostgresDatabase("pg_journal_async");
    try {
      const admin = database({}, own.url);
      await admin.query("test", `ALTER DATABASE "${own.name}" SET synchronous_commit = off`);
      const journal = await open("host-h/boot/1/1", database({}, own.url));
      for (let i = 0; i < 20; i++) await journal.record(telegramMessage(`async-${i}`));
      const written = await admin.query<{ lsn: string }>(
        "test",
        "SELECT pg_current_wal_insert_lsn()::text AS lsn",
      );
      await journal.sync();
      const flushed = await admin.query<{ behind: boolean }>(
        "test",
        "SELECT pg_current_wal_flush_lsn() < $1::pg_lsn AS behind",
        [written.rows[0]?.lsn],
      );
      expect(flushed.rows[0]?.behind).toBe(false);
      await journal.close();
    } finally {
      for (const made of databases.splice(0)) await made.close();
      await own.drop();
    }
  });

  it("refuses a journal schema newer than this build, changing nothing", async () => {
    await (await open("host-d/boot/1/1")).close();
    const admin = database();
    await admin.query(
      "test",
      "UPDATE mediagate_schema SET version = 9 WHERE component = 'journal'",
    );
    try {
      const refused = await PostgresJournal.open(database(), { owner: "host-d/boot/1/2" }).catch(
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(PostgresSchemaError);
      expect((refused as Error).message).toMatch(/the journal schema is at version 9, newer/);
    } finally {
      await admin.query(
        "test",
        "UPDATE mediagate_schema SET version = 1 WHERE component = 'journal'",
      );
    }
  });
});

describe("PostgresJournal across a server restart and an outage (a cluster of its own)", () => {
  let cluster: PrivatePostgres;
  beforeAll(() => {
    cluster = startPrivatePostgres();
  });
  afterAll(() => {
    cluster?.remove();
  });

  it("keeps what it recorded, reconnects, takes its owner lock again, and says when the server is gone", async () => {
    const own = database({ connectTimeoutMs: 2_000 }, cluster.url);
    const journal = await open("host-e/boot/1/1", own);
    const first = await journal.record(telegramMessage("1"));

    controlPostgres("restart", "fast", cluster);
    // The pool may hand the first call a connection the restart closed: it fails as an
    // outage and the next call makes a new one.
    const second = await waitFor(() => journal.record(telegramMessage("2")));
    expect(second.fresh).toBe(true);
    expect(await journal.record(telegramMessage("1"))).toEqual({ id: first.id, fresh: false });

    // A takeover right after the restart first waits out the grace in which live processes
    // take their locks again.
    const waits: number[] = [];
    const other = await open("host-f/boot/1/1", database({}, cluster.url), {
      sleep: async (ms) => {
        waits.push(ms);
      },
    });
    const locks = database({}, cluster.url);
    await waitUntil(async () => {
      const probe = await locks.transaction("probe", (tx) =>
        tx.query<{ free: boolean }>("SELECT pg_try_advisory_xact_lock($1::bigint) AS free", [
          ownerLockKey("host-e/boot/1/1"),
        ]),
      );
      return probe.rows[0]?.free === false;
    }, "the owner lock taken again after the restart");
    expect(journal.ownerHeld).toBe(true);
    expect(await other.takeOver()).toEqual([]);
    expect(waits).toHaveLength(1);
    expect(waits[0]).toBeGreaterThan(0);
    expect(waits[0]).toBeLessThanOrEqual(Defaults.postgres.ownerGraceMs);

    controlPostgres("stop", "fast", cluster);
    const refused = await journal.record(telegramMessage("3")).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(StorageError);
    expect((refused as StorageError).cause).toBeInstanceOf(PostgresStoreError);
    expect(((refused as StorageError).cause as PostgresStoreError).unreachable).toBe(true);
    expect((refused as Error).message).toMatch(
      /record failed: the server is not reachable .*; the message was not confirmed and will be handled once it is saved/,
    );
    controlPostgres("start", "fast", cluster);
    expect((await waitFor(() => journal.record(telegramMessage("3")))).fresh).toBe(true);

    await journal.close();
    const taken = await waitFor(async () => {
      const entries = await other.takeOver();
      expect(entries).toHaveLength(3);
      return entries;
    });
    expect(taken.map((entry) => entry.key)).toEqual([
      "work:telegram:1",
      "work:telegram:2",
      "work:telegram:3",
    ]);
  });
});
