import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { waitUntil } from "../../../../test-support/wait.js";
import type { SqliteProgram } from "../../test/fixtures/sqlite-program.js";
import { threadsNamed, threadsWaitingIn } from "../../test/fixtures/thread-names.js";
import type { TestProgram } from "../../test/fixtures/worker-program.js";
import { type CallFailure, DatabaseWorker, programUrl } from "./database-worker.js";

/** The revived error keeps the failure for the assertions. */
class Revived extends Error {
  readonly failure: CallFailure;
  constructor(failure: CallFailure) {
    super(`${failure.operation}: ${failure.error.name}: ${failure.error.message}`);
    this.failure = failure;
  }
}

const started: DatabaseWorker<TestProgram>[] = [];

async function start(
  settings: { fail?: boolean } = {},
  closeTimeoutMs?: number,
  threadName?: string,
): Promise<DatabaseWorker<TestProgram>> {
  const worker = await DatabaseWorker.start<TestProgram>({
    program: programUrl("../../test/fixtures/worker-program.js", import.meta.url),
    path: "/nowhere/test.db",
    settings,
    threadName,
    revive: (failure) => new Revived(failure),
    ...(closeTimeoutMs === undefined ? {} : { closeTimeoutMs }),
  });
  started.push(worker);
  return worker;
}

afterEach(async () => {
  for (const worker of started.splice(0)) await worker.close().catch(() => {});
});

describe("DatabaseWorker", () => {
  it("names its own thread threadName, cut to Linux's 15 characters", async () => {
    const own = readFileSync("/proc/thread-self/comm", "utf8");
    await start({}, undefined, "mg-test-thread-0123");
    expect(threadsNamed("mg-test-thread-")).toBe(1);
    expect(readFileSync("/proc/thread-self/comm", "utf8")).toBe(own);
  });

  it("answers calls in the order they were made, values cloned across the thread", async () => {
    const worker = await start();
    const answers = await Promise.all([
      worker.call("echo", 1),
      worker.call("echo", new Map([["text:0", "sent"]])),
      worker.call("echo", { nested: [1, "two"] }),
    ]);
    expect(answers).toEqual([1, new Map([["text:0", "sent"]]), { nested: [1, "two"] }]);
  });

  it("posts the calls made before the caller's next wait in one message", async () => {
    const worker = await start();
    const together = [worker.call("echo", 1), worker.call("echo", 2)];
    const later = worker.call("echo", 3); // made before the caller waits: still the same message
    await expect(Promise.all([...together, later])).resolves.toEqual([1, 2, 3]);
    expect(worker.stats).toEqual({ calls: 3, messages: 1 });
    await expect(worker.call("echo", 4)).resolves.toBe(4);
    await expect(worker.call("echo", 5)).resolves.toBe(5);
    expect(worker.stats).toEqual({ calls: 5, messages: 3 });
  });

  it("sends the calls made while the thread is busy in one message, each answered alone", async () => {
    const worker = await start();
    const busy = worker.call("block", 100);
    await Promise.resolve(); // the block is posted alone
    const queued = [
      worker.call("echo", 1),
      worker.call("explode").catch((e: unknown) => e),
      worker.call("echo", 2),
    ];
    expect(await busy).toBe("unblocked");
    const [one, failed, two] = await Promise.all(queued);
    expect([one, two]).toEqual([1, 2]);
    expect(failed).toBeInstanceOf(Revived);
    expect((failed as Revived).failure.operation).toBe("explode");
    expect(worker.stats).toEqual({ calls: 4, messages: 2 });
    await expect(worker.call("echo", 3)).resolves.toBe(3);
    expect(worker.stats).toEqual({ calls: 5, messages: 3 });
  });

  it("fails an answer that cannot cross the thread, and answers the rest of its batch", async () => {
    const worker = await start();
    const busy = worker.call("block", 100);
    await Promise.resolve();
    const queued = [
      worker.call("echo", 1),
      worker.call("uncloneable").catch((e: unknown) => e),
      worker.call("echo", 2),
    ];
    await busy;
    const [one, failed, two] = await Promise.all(queued);
    expect([one, two]).toEqual([1, 2]);
    expect(failed).toBeInstanceOf(Revived);
    expect((failed as Revived).failure.error.name).toBe("DataCloneError");
    await expect(worker.call("echo", 3)).resolves.toBe(3);
  });

  it("refuses an argument that cannot cross the thread in a batch, sending the others", async () => {
    const worker = await start();
    const busy = worker.call("block", 100);
    await Promise.resolve();
    const refused = worker.call("echo", (() => 1) as unknown as number).catch((e: unknown) => e);
    const after = worker.call("echo", 2);
    await busy;
    expect(await refused).toBeInstanceOf(Revived);
    await expect(after).resolves.toBe(2);
    expect(worker.stats).toEqual({ calls: 3, messages: 2 });
  });

  it("rebuilds a thrown error from its name, code, fields and cause", async () => {
    const worker = await start();
    const error = await worker.call("explode").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Revived);
    const { failure } = error as Revived;
    expect(failure.operation).toBe("explode");
    expect(failure.error).toMatchObject({
      name: "Error",
      message: "outer",
      cause: {
        name: "ProgramError",
        message: "disk full",
        code: "SQLITE_FULL",
        fields: { operation: "explode", count: 3, code: "SQLITE_FULL" },
      },
    });
  });

  it("rejects the open with the program's failure and leaves no thread behind", async () => {
    const error = await start({ fail: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Revived);
    expect((error as Revived).failure).toMatchObject({
      operation: "open",
      error: { message: "cannot open /nowhere/test.db" },
    });
  });

  it("rejects the call in flight, the calls queued behind it and later calls when the thread dies", async () => {
    const worker = await start();
    const dying = worker.call("exit", 3).catch((e: unknown) => e);
    const queued = worker.call("echo", "never answered").catch((e: unknown) => e);
    for (const error of [await dying, await queued]) {
      expect(error).toBeInstanceOf(Revived);
      expect((error as Revived).failure.error).toMatchObject({
        name: "DatabaseWorkerStopped",
        message: "the database worker thread stopped unexpectedly (exit code 3)",
      });
    }
    await expect(worker.call("echo", "later")).rejects.toThrow(/stopped unexpectedly/);
    await expect(worker.close()).resolves.toBeUndefined();
  });

  it("refuses an argument that cannot cross the thread without losing the calls after it", async () => {
    const worker = await start();
    const error = await worker
      .call("echo", (() => 1) as unknown as number)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Revived);
    expect((error as Revived).failure.operation).toBe("echo");
    await expect(worker.call("echo", 2)).resolves.toBe(2);
  });

  it("lets calls made before close finish, then refuses new ones", async () => {
    const worker = await start();
    const before = worker.call("block", 200);
    const closing = worker.close();
    await expect(worker.call("echo", 1)).rejects.toThrow(/DatabaseWorkerClosed/);
    await expect(before).resolves.toBe("unblocked");
    await closing;
  });

  it("gives up on a call stuck past closeTimeoutMs: close and the call reject, nothing hangs", async () => {
    const worker = await start({}, 50);
    const stuck = worker.call("block", 2_000).catch((e: unknown) => e);
    await expect(worker.close()).rejects.toThrow(/did not close within 50 ms/);
    const error = await stuck;
    expect(error).toBeInstanceOf(Revived);
    expect((error as Revived).failure.error.name).toBe("DatabaseWorkerCloseTimeout");
  });

  it("abandons a thread stuck in a call: the call and later ones reject at once", async () => {
    const worker = await start();
    const stuck = worker.call("block", 2_000).catch((e: unknown) => e);
    worker.abandon();
    const error = await stuck;
    expect(error).toBeInstanceOf(Revived);
    expect((error as Revived).failure).toMatchObject({
      operation: "block",
      error: { name: "DatabaseWorkerAbandoned" },
    });
    await expect(worker.call("echo", 1)).rejects.toThrow(/DatabaseWorkerAbandoned/);
    worker.abandon();
  });

  it("lets an abandoned thread end the call it is in, then stop: the calls of its batch after it never run", async () => {
    const dir = await tempDirForTest("mg-worker-");
    const [started, after] = [join(dir, "started"), join(dir, "after")];
    const worker = await start({}, undefined, "mg-test-letgo");
    const first = worker.call("block", 100);
    await Promise.resolve(); // posted alone
    // Made while the first call runs: they reach the thread together, as one batch.
    const batch = [
      worker.call("mark", started),
      worker.call("block", 2_000),
      worker.call("mark", after),
    ].map((call) => call.catch((e: unknown) => e));
    await first;
    await waitUntil(
      () => existsSync(started) && threadsWaitingIn("mg-test-letgo", "futex") === 1,
      "the second batch blocks",
    );

    worker.abandon();

    for (const error of await Promise.all(batch)) {
      expect((error as Revived).failure.error.name).toBe("DatabaseWorkerAbandoned");
    }
    await waitUntil(() => threadsNamed("mg-test-letgo") === 0, "the thread ended");
    expect(existsSync(after)).toBe(false);
  });

  it("lets a thread stuck in SQLite past closeTimeoutMs go without killing the process when that call fails", async () => {
    // Terminated from outside instead, the thread aborted the whole process once its wait for
    // the lock ended in SQLITE_BUSY (better-sqlite3 12: "FATAL ERROR: v8::ToLocalChecked Empty
    // MaybeLocal"); this test then takes its vitest worker down with it.
    const path = join(await tempDirForTest("mg-worker-"), "kv.db");
    const worker = await DatabaseWorker.start<SqliteProgram>({
      program: programUrl("../../test/fixtures/sqlite-program.js", import.meta.url),
      path,
      settings: {},
      threadName: "mg-test-busy",
      revive: (failure) => new Revived(failure),
      closeTimeoutMs: 50,
    });
    await worker.call("busyTimeout", 2_000);
    const holder = new Database(path);
    try {
      holder.exec("BEGIN IMMEDIATE");
      const stuck = worker.call("insert", "never").catch((e: unknown) => e);
      await waitUntil(
        () => threadsWaitingIn("mg-test-busy", "nanosleep") === 1,
        "the insert waits for the lock",
      );

      await expect(worker.close()).rejects.toThrow(/did not close within 50 ms/);

      expect(((await stuck) as Revived).failure.error.name).toBe("DatabaseWorkerCloseTimeout");
      // Its wait ends in SQLITE_BUSY 2 s in, in a thread let go: it ends there.
      await waitUntil(() => threadsNamed("mg-test-busy") === 0, "the thread ended");
    } finally {
      holder.exec("ROLLBACK");
    }
    expect(holder.prepare("SELECT count(*) AS n FROM kv").get()).toEqual({ n: 0 });
    holder.close();
  });
});
