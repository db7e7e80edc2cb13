import { readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../../../test-support/wait.js";
import { lockedDatabase } from "../../test/fixtures/locked-database.js";
import { threadsNamed, threadsWaitingIn } from "../../test/fixtures/thread-names.js";
import { checkIntegrity, checkIntegrityWithin } from "./integrity.js";

/** How many of this process's file descriptors (every thread's) are open on `path`. */
function openedBy(path: string): number {
  return readdirSync("/proc/self/fd").filter((fd) => {
    try {
      return readlinkSync(join("/proc/self/fd", fd)) === path;
    } catch {
      return false; // closed since it was listed
    }
  }).length;
}

describe("checkIntegrity", () => {
  it("answers stopped as soon as its signal aborts, while SQLite still waits for a lock", async () => {
    const { path, release } = await lockedDatabase();
    try {
      const stop = new AbortController();
      const report = checkIntegrity(path, { busyTimeoutMs: 600_000, signal: stop.signal });
      // The check's thread has the file open: its read is about to wait, or waits, for the lock.
      await waitUntil(() => openedBy(path) >= 2, "the check's thread opened the file");
      stop.abort();
      expect(await report).toEqual({ status: "stopped" });
    } finally {
      release();
    }
  });

  it("lets a stopped check's thread end once its wait for the lock fails, and nothing else ends", async () => {
    // The thread was terminated from outside before: when its wait then ended in SQLITE_BUSY,
    // better-sqlite3 aborted the whole process ("FATAL ERROR: v8::ToLocalChecked Empty
    // MaybeLocal"), a test run's vitest worker with it.
    // Earlier tests' checks, let go, end once their locks are released: none may be taken for
    // this one's.
    await waitUntil(() => threadsNamed("mg-check") === 0, "earlier checks' threads ended");
    const { path, release } = await lockedDatabase();
    try {
      const stop = new AbortController();
      const report = checkIntegrity(path, { busyTimeoutMs: 2_000, signal: stop.signal });
      await waitUntil(
        () => threadsWaitingIn("mg-check", "nanosleep") === 1,
        "the check waits for the lock",
      );
      stop.abort();
      expect(await report).toEqual({ status: "stopped" });
      // Its wait ends in SQLITE_BUSY 2 s in, in a thread let go: it ends there.
      await waitUntil(() => threadsNamed("mg-check") === 0, "the check's thread ended");
    } finally {
      release();
    }
  });

  it("answers stopped without starting a thread when its signal aborted already", async () => {
    const { path, release } = await lockedDatabase();
    try {
      const report = await checkIntegrity(path, { signal: AbortSignal.abort() });
      expect(report).toEqual({ status: "stopped" });
      expect(openedBy(path)).toBe(1);
    } finally {
      release();
    }
  });

  it("still gives its verdict when nothing stops it", async () => {
    const { path, release } = await lockedDatabase();
    release(); // unlocked
    const { early, report } = await checkIntegrityWithin(path, {
      signal: new AbortController().signal,
    });
    expect(early).toEqual({ status: "sound" });
    expect(await report).toEqual({ status: "sound" });
  });

  it("gives a check that outlasted the wait up when its signal aborts: the late report is stopped", async () => {
    const { path, release } = await lockedDatabase();
    try {
      const stop = new AbortController();
      const check = await checkIntegrityWithin(path, {
        busyTimeoutMs: 600_000,
        waitMs: 0,
        signal: stop.signal,
      });
      expect(check.early).toBeUndefined();
      stop.abort();
      expect(await check.report).toEqual({ status: "stopped" });
    } finally {
      release();
    }
  });
});
