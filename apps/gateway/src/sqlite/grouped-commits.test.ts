import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../../test-support/wait.js";
import type { SqliteProgram } from "../../test/fixtures/sqlite-program.js";
import { threadsNamed, threadsWaitingIn } from "../../test/fixtures/thread-names.js";
import { type CallFailure, DatabaseWorker, programUrl } from "./database-worker.js";

// The calls of one batch (those made while the thread was busy) share one commit, through the
// real worker thread and a real SQLite file (test/fixtures/sqlite-program.ts).

class Revived extends Error {
  readonly failure: CallFailure;
  constructor(failure: CallFailure) {
    super(`${failure.operation}: ${failure.error.message}`);
    this.failure = failure;
  }
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function start(threadName?: string): Promise<DatabaseWorker<SqliteProgram>> {
  const dir = await mkdtemp(join(tmpdir(), "mg-grouped-"));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  const worker = await DatabaseWorker.start<SqliteProgram>({
    program: programUrl("../../test/fixtures/sqlite-program.js", import.meta.url),
    path: join(dir, "test.db"),
    settings: {},
    threadName,
    revive: (failure) => new Revived(failure),
  });
  cleanups.push(() => worker.close());
  return worker;
}

/** Calls made while the thread is blocked: they reach it together, in one batch. */
async function behindBusy<T>(
  worker: DatabaseWorker<SqliteProgram>,
  calls: () => Promise<T>[],
): Promise<PromiseSettledResult<T>[]> {
  const busy = worker.call("block", 100);
  await Promise.resolve(); // posted alone: the calls below wait for it
  const made = calls();
  await busy;
  return Promise.allSettled(made);
}

describe("grouped commits", () => {
  it("commits a batch's calls once, where one at a time commits each", async () => {
    const worker = await start();
    await worker.call("insert", "first");
    const before = await worker.call("walFrames");
    for (let i = 0; i < 10; i++) await worker.call("insert", `alone-${i}`);
    const alone = (await worker.call("walFrames")) - before;
    const results = await behindBusy(worker, () =>
      Array.from({ length: 10 }, (_, i) => worker.call("insert", `together-${i}`)),
    );
    const together = (await worker.call("walFrames")) - before - alone;
    expect(results.every((result) => result.status === "fulfilled")).toBe(true);
    expect((await worker.call("keys")).length).toBe(21);
    expect(alone).toBeGreaterThanOrEqual(10);
    expect(together).toBeLessThanOrEqual(3);
  });

  it("undoes a failing call's writes and keeps the others'", async () => {
    const worker = await start();
    const [a, pair, c] = await behindBusy(worker, () => [
      worker.call("insert", "a"),
      // Inserts "b", then fails on the "a" just written: "b" must not stay.
      worker.call("insertTwo", "b", "a"),
      worker.call("insert", "c"),
    ]);
    expect(a?.status).toBe("fulfilled");
    expect(pair?.status).toBe("rejected");
    expect((pair as PromiseRejectedResult).reason.failure.error.code).toBe(
      "SQLITE_CONSTRAINT_PRIMARYKEY",
    );
    expect(c?.status).toBe("fulfilled");
    expect(await worker.call("keys")).toEqual(["a", "c"]);
  });

  it("fails every call of the batch and writes nothing when the commit is refused", async () => {
    const worker = await start();
    const results = await behindBusy(worker, () => [
      worker.call("insert", "x"),
      worker.call("orphan"),
      worker.call("insert", "y"),
    ]);
    for (const result of results) {
      expect(result.status).toBe("rejected");
      expect((result as PromiseRejectedResult).reason.failure.error.code).toBe(
        "SQLITE_CONSTRAINT_FOREIGNKEY",
      );
    }
    expect(await worker.call("keys")).toEqual([]);
    await worker.call("insert", "z");
    expect(await worker.call("keys")).toEqual(["z"]);
  });

  it("fails every call of the batch when SQLite ended the transaction under it", async () => {
    const worker = await start();
    const results = await behindBusy(worker, () => [
      worker.call("insert", "p"),
      worker.call("endTransaction"),
      worker.call("insert", "q"),
    ]);
    expect(results.map((result) => result.status)).toEqual(["rejected", "rejected", "rejected"]);
    expect(await worker.call("keys")).toEqual([]);
    await worker.call("insert", "r");
    expect(await worker.call("keys")).toEqual(["r"]);
  });

  it("runs close alone after the batch's other calls, which are kept", async () => {
    const worker = await start();
    const busy = worker.call("block", 100);
    const inserted = worker.call("insert", "kept");
    const keys = worker.call("keys");
    const closed = worker.close();
    await busy;
    await inserted;
    expect(await keys).toEqual(["kept"]);
    await closed;
  });

  it("writes none of a shared transaction whose thread is abandoned in the middle of it", async () => {
    const worker = await start("mg-test-shared");
    const first = worker.call("block", 100);
    await Promise.resolve(); // posted alone
    // Made while the first call runs: one batch, one transaction.
    const batch = [
      worker.call("insert", "a"),
      worker.call("block", 2_000),
      worker.call("insert", "b"),
    ].map((call) => call.catch((e: unknown) => e));
    await first;
    await waitUntil(() => threadsWaitingIn("mg-test-shared", "futex") === 1, "the batch blocks");

    worker.abandon();

    for (const error of await Promise.all(batch)) {
      expect((error as Revived).failure.error.name).toBe("DatabaseWorkerAbandoned");
    }
    await waitUntil(() => threadsNamed("mg-test-shared") === 0, "the thread ended");
    const db = new Database(worker.path, { readonly: true });
    expect(db.prepare("SELECT key FROM kv").all()).toEqual([]);
    db.close();
  });
});
