import { execFile } from "node:child_process";
import { chmod, mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { promisify } from "node:util";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type PrivatePostgres, startPrivatePostgres } from "../../../../test-support/postgres.js";
import { telegramMessage } from "../../test/fixtures/inbound-message.js";
import { type LoopFs, mountLoopFs } from "../../test/fixtures/loop-fs.js";
import { StorageError } from "../durable/errors.js";
import { PostgresJournal } from "../durable/postgres-journal.js";
import { reportStepFailure, StateFullText } from "../pipeline/boundary.js";
import { PipelineStepError } from "../pipeline/step-error.js";
import type { MessageContext } from "../pipeline/types.js";
import { StateStoreError } from "../state/errors.js";
import { PostgresStateStore } from "../state/postgres-store.js";
import { PostgresDatabase } from "./database.js";

const run = promisify(execFile);

/**
 * A PostgreSQL server whose disk is full, for real: a private cluster with the test database
 * in a tablespace on an 8 MiB loop-mounted file system (root only, as `loop-fs.ts`), filled
 * until the server answers SQLSTATE 53100 (`disk_full`). The store reports it as the SQLite
 * store reports `SQLITE_FULL`: the same `full` errors, codes and chat line, and the call works
 * again once space is freed.
 */
describe("the PostgreSQL store on a server whose disk is full", () => {
  let cluster: PrivatePostgres;
  let disk: LoopFs;
  let admin: pg.Client;
  let filler: pg.Client;
  let database: PostgresDatabase;
  let journal: PostgresJournal;
  let store: PostgresStateStore;

  beforeAll(async () => {
    cluster = startPrivatePostgres();
    disk = await mountLoopFs(8);
    const location = join(disk.dir, "tablespace");
    // The server runs as the cluster's owner: it must pass through the root-owned directories.
    await chmod(dirname(disk.dir), 0o711);
    await chmod(disk.dir, 0o711);
    await mkdir(location);
    await run("chown", [`${cluster.owner}:`, location]);
    admin = new pg.Client({ connectionString: cluster.url });
    await admin.connect();
    await admin.query(`CREATE TABLESPACE tiny LOCATION '${location}'`);
    await admin.query("CREATE DATABASE full_disk TABLESPACE tiny");
    const url = new URL(cluster.url);
    url.pathname = "/full_disk";
    database = new PostgresDatabase({ url: url.toString() });
    // Migrated while there is room: every table exists, with no page to write into yet.
    journal = await PostgresJournal.open(database, { ownerGraceMs: 0 });
    store = await PostgresStateStore.open(database, "default");
    filler = new pg.Client({ connectionString: url.toString() });
    await filler.connect();
  }, 60_000);

  afterAll(async () => {
    await journal?.close();
    await store?.close();
    await database?.close();
    await filler?.end();
    await admin?.end();
    cluster?.remove();
    await disk?.remove();
  });

  /** Fills the tablespace with committed rows (incompressible, uncompressed) until 53100. */
  async function fill(): Promise<void> {
    await filler.query("CREATE TABLE filler (b text) WITH (autovacuum_enabled = off)");
    await filler.query("ALTER TABLE filler ALTER COLUMN b SET STORAGE EXTERNAL");
    for (let i = 0; i < 100; i++) {
      try {
        await filler.query(
          "INSERT INTO filler SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 16384)",
        );
      } catch (error) {
        expect((error as { code?: unknown }).code).toBe("53100");
        return;
      }
    }
    throw new Error("8 MiB took 100 MiB of rows without filling up");
  }

  it("refuses writes as `full` (MG_JOURNAL_DISK_FULL, MG_STATE_DISK_FULL), then works once space is freed", async () => {
    const sessionId = await store.currentSessionId("telegram:1");
    await fill();

    const recording = journal.record(telegramMessage("full-1", "hello"));
    await expect(recording).rejects.toBeInstanceOf(StorageError);
    const notRecorded = (await recording.catch((error: unknown) => error)) as StorageError;
    expect(notRecorded).toMatchObject({
      code: "MG_JOURNAL_DISK_FULL",
      full: true,
      damaged: false,
      systemCode: "53100",
    });
    expect(notRecorded.message).toContain("is full; free space");

    const appending = store.appendHistory(sessionId, [{ role: "user", content: "hello" }]);
    const notSaved = (await appending.catch((error: unknown) => error)) as StateStoreError;
    expect(notSaved).toBeInstanceOf(StateStoreError);
    expect(notSaved).toMatchObject({ code: "MG_STATE_DISK_FULL", full: true });

    // The pipeline reports it as it reports a full SQLite state file: the message kept.
    const said: string[] = [];
    const finished: unknown[] = [];
    const ctx = {
      entryId: 7,
      target: { chatId: "1" },
      channel: { sendText: async (_target: unknown, text: string) => void said.push(text) },
      services: {
        outbox: { signal: new AbortController().signal },
        journal: { finished: async (...args: unknown[]) => void finished.push(args) },
      },
      log: { error: () => {}, warn: () => {} },
    } as unknown as MessageContext;
    await reportStepFailure(ctx, new PipelineStepError("runTurn", notSaved), "generic");
    expect(said).toEqual([StateFullText]);
    expect(finished).toEqual([]);

    await filler.query("DROP TABLE filler");
    const recorded = await journal.record(telegramMessage("full-1", "hello"));
    expect(recorded.fresh).toBe(true);
    await store.appendHistory(sessionId, [{ role: "user", content: "hello" }]);
    expect(await store.loadHistory(sessionId)).toEqual([{ role: "user", content: "hello" }]);
  }, 60_000);
});
