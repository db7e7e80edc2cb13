import { afterEach, describe, expect, it } from "vitest";
import { lockedDatabase } from "../../test/fixtures/locked-database.js";
import type { TestProgram } from "../../test/fixtures/worker-program.js";
import { type CheckedDatabase, openChecked } from "./checked-open.js";
import { programUrl } from "./database-worker.js";
import { fromWire } from "./protocol.js";

class Damaged extends Error {
  override readonly name = "Damaged";
}

const opened: CheckedDatabase<TestProgram, Damaged>[] = [];
const locks: (() => void)[] = [];

afterEach(async () => {
  for (const database of opened.splice(0)) await database.close().catch(() => {});
  for (const release of locks.splice(0)) release();
});

/**
 * The test program (no database of its own) opened on `path` through {@link openChecked}: the
 * integrity check reads the real file, the program never touches it.
 */
async function open(path: string, integrityWaitMs: number, integrityCheck = true) {
  const database = await openChecked<TestProgram, Damaged>({
    program: programUrl("../../test/fixtures/worker-program.js", import.meta.url),
    path,
    settings: {},
    revive: ({ error }) => {
      const revived = fromWire(error);
      return revived.message === "outer" ? new Damaged("the file is damaged") : revived;
    },
    busyTimeoutMs: 600_000,
    integrityWaitMs,
    integrityCheck,
    isDamage: (error): error is Damaged => error instanceof Damaged,
    damaged: (problems) => new Damaged(problems.join("; ")),
  });
  opened.push(database);
  return database;
}

describe("openChecked", () => {
  it("stops a check that outlasted the wait when the database closes: its report is stopped", async () => {
    const { path, release } = await lockedDatabase();
    locks.push(release);
    const database = await open(path, 0);
    expect(database.check.early).toBeUndefined();

    await database.close();

    expect(await database.check.report).toEqual({ status: "stopped" });
    expect(database.damage).toBeUndefined();
  });

  it("keeps the first error a call failed with that says the file is damaged", async () => {
    const { path, release } = await lockedDatabase();
    release(); // unlocked
    const database = await open(path, 60_000);
    expect(database.check.early).toEqual({ status: "sound" });
    await expect(database.worker.call("echo", 1)).resolves.toBe(1);
    expect(database.damage).toBeUndefined();

    await expect(database.worker.call("explode")).rejects.toThrow("the file is damaged");

    expect(database.damage?.message).toBe("the file is damaged");
  });

  it("skips the check when told to", async () => {
    const { path, release } = await lockedDatabase();
    locks.push(release);
    const database = await open(path, 60_000, false);
    expect(database.check.early).toEqual({ status: "skipped" });
    expect(await database.check.report).toEqual({ status: "skipped" });
  });
});
