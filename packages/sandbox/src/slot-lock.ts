import { randomUUID } from "node:crypto";
import type { Stats } from "node:fs";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { lock } from "proper-lockfile";
import { Defaults } from "./defaults.js";
import { currentInstanceId, instanceLiveness } from "./instance.js";
import { KeyedLock } from "./keyed-lock.js";
import { slotPaths } from "./slot-paths.js";

/** One queue per slot directory for the whole process, whichever Sandbox (profile) asks. */
const inProcess = new KeyedLock();

/** Options of {@link withSlotLock}. */
export interface SlotLockOptions {
  /** Told when the hold was lost while `fn` ran (this process stalled past the stale time). */
  readonly onWarning?: ((message: string, cause?: unknown) => void) | undefined;
  /** How long to wait for a live holder in another process (default `Defaults.slotLockWaitMs`). */
  readonly waitMs?: number | undefined;
  /**
   * How long a lock may be seen without its owner record before it is taken over (default
   * `Defaults.slotLockUnrecordedMs`).
   */
  readonly unrecordedMs?: number | undefined;
}

/**
 * Runs `fn` holding the slot directory's lock: first the process-wide queue keyed by the
 * directory (so the Sandboxes of two profiles sharing a `shared:` slot take turns), then
 * `<home>/sandboxes/locks/docker/<name>.lock` (a directory made atomically by proper-lockfile
 * and refreshed while held) so another gateway process takes turns too.
 * Provisioning, cleanup with its delete and the reaper's delete all run under it, so a slot
 * is never provisioned while it is being deleted.
 *
 * A holder records itself beside the lock (`<name>.lock.owner`, see {@link LockOwner}), so a
 * lock whose holder was killed is taken over at once rather than after the stale time: a
 * crashed gateway must not hold its persistent slot hostage for the next one. A lock without
 * a record of its own is taken over once this process has seen it so for `unrecordedMs`
 * (3 s): its holder was killed between making the lock and recording itself, or between
 * removing its record and the lock, each a matter of milliseconds for a live holder (found by
 * the SIGKILL crash loop, where such a lock held a persistent slot for the 20 s until it went
 * stale). Any lock is taken over once it has not been refreshed for `Defaults.slotLockStaleMs`.
 * Waiting longer than `waitMs` for a live holder fails. Not reentrant: `fn` must not take the
 * same slot's lock again.
 */
export async function withSlotLock<T>(
  slotDir: string,
  fn: () => Promise<T>,
  options: SlotLockOptions = {},
): Promise<T> {
  const key = resolve(slotDir);
  return inProcess.run(key, async () => {
    const { lockDir, lockFile } = slotPaths(key);
    await mkdir(lockDir, { recursive: true, mode: 0o700 });
    const release = await acquire(key, lockFile, options);
    try {
      return await fn();
    } finally {
      await release().catch(() => undefined);
    }
  });
}

/**
 * Who holds a slot lock: the holder's {@link currentInstanceId} and the identity of the lock
 * directory it made (inode and birth time), so a record left by a dead holder is never
 * mistaken for the record of a lock made since.
 */
interface LockOwner {
  readonly instance: string;
  readonly lock: string;
}

const ownerFileOf = (lockFile: string) => `${lockFile}.owner`;
const identityOf = (stats: Stats) => `${stats.ino}:${stats.birthtimeMs}`;

async function acquire(
  key: string,
  lockFile: string,
  options: SlotLockOptions,
): Promise<() => Promise<void>> {
  const waitMs = options.waitMs ?? Defaults.slotLockWaitMs;
  // Waits run on the monotonic clock: a step of the wall clock neither ends one nor stretches it.
  const deadline = performance.now() + waitMs;
  const unrecorded: UnrecordedWatch = {
    graceMs: options.unrecordedMs ?? Defaults.slotLockUnrecordedMs,
    lock: undefined,
    sinceMs: 0,
  };
  let delayMs = 10;
  for (;;) {
    try {
      const release = await lock(key, {
        lockfilePath: lockFile,
        realpath: false,
        stale: Defaults.slotLockStaleMs,
        retries: 0,
        onCompromised: (error) => {
          options.onWarning?.(`lost the lock of slot directory ${key} while holding it`, error);
        },
      });
      await recordOwner(lockFile);
      return async () => {
        // The record goes first: once the lock is released, a record there is another's.
        await rm(ownerFileOf(lockFile), { force: true });
        await release();
      };
    } catch (error) {
      const held = error instanceof Error && "code" in error && error.code === "ELOCKED";
      const taken = held ? await takeOverAbandoned(lockFile, unrecorded) : undefined;
      if (taken === "unrecorded") {
        options.onWarning?.(
          `took over the lock of slot directory ${key}: it had no owner record for ${unrecorded.graceMs} ms (its holder was killed while taking or releasing it)`,
        );
      }
      if (taken !== undefined) continue;
      if (!held || performance.now() >= deadline) {
        throw new Error(
          `slot directory ${key} is locked by another process (waited ${waitMs} ms): ${
            error instanceof Error ? error.message : String(error)
          }`,
          { cause: error },
        );
      }
      await sleep(delayMs);
      delayMs = Math.min(delayMs * 1.5, 100);
    }
  }
}

/** Writes the {@link LockOwner} record of a lock this process just made (atomically). */
async function recordOwner(lockFile: string): Promise<void> {
  const owner: LockOwner = {
    instance: currentInstanceId(),
    lock: identityOf(await stat(lockFile)),
  };
  const temporary = `${ownerFileOf(lockFile)}.${randomUUID()}`;
  await writeFile(temporary, JSON.stringify(owner), { mode: 0o600 });
  await rename(temporary, ownerFileOf(lockFile));
}

async function readOwner(lockFile: string): Promise<LockOwner | undefined> {
  try {
    const parsed: unknown = JSON.parse(await readFile(ownerFileOf(lockFile), "utf8"));
    if (typeof parsed !== "object" || parsed === null) return undefined;
    const { instance, lock: made } = parsed as Record<string, unknown>;
    if (typeof instance !== "string" || typeof made !== "string") return undefined;
    return { instance, lock: made };
  } catch {
    return undefined;
  }
}

/**
 * The lock directory this process saw without an owner record, and since when
 * (`performance.now`).
 */
interface UnrecordedWatch {
  readonly graceMs: number;
  lock: string | undefined;
  sinceMs: number;
}

/**
 * Removes a held lock whose holder is gone and says why it could (`undefined`: it did not):
 * its record names a holder that is not running (`owner-gone`), or it has had no record of
 * its own (a record of an older lock directory counts as none) for as long as this process
 * has watched it, `graceMs` (`unrecorded`).
 */
async function takeOverAbandoned(
  lockFile: string,
  watch: UnrecordedWatch,
): Promise<"owner-gone" | "unrecorded" | undefined> {
  const current = await stat(lockFile).catch(() => undefined);
  if (current === undefined) return undefined;
  const identity = identityOf(current);
  const owner = await readOwner(lockFile);
  if (owner?.lock === identity) {
    watch.lock = undefined;
    if (instanceLiveness(owner.instance) !== "gone") return undefined;
    return (await removeLock(lockFile, identity, owner.instance)) ? "owner-gone" : undefined;
  }
  if (watch.lock !== identity) {
    watch.lock = identity;
    watch.sinceMs = performance.now();
    return undefined;
  }
  if (performance.now() - watch.sinceMs < watch.graceMs) return undefined;
  return (await removeLock(lockFile, identity, undefined)) ? "unrecorded" : undefined;
}

/**
 * Removes lock directory `identity`; `false` when it is not there any more. It is first renamed
 * aside and checked again there, so a lock another process made meanwhile is put back, not
 * removed. The owner record goes too when it is `instance`'s (a record of no one's is left:
 * the next holder replaces it).
 */
async function removeLock(
  lockFile: string,
  identity: string,
  instance: string | undefined,
): Promise<boolean> {
  const aside = `${lockFile}.gone-${randomUUID()}`;
  try {
    await rename(lockFile, aside);
  } catch {
    return false;
  }
  const moved = await stat(aside).catch(() => undefined);
  if (moved === undefined || identityOf(moved) !== identity) {
    await rename(aside, lockFile).catch(() => undefined);
    return false;
  }
  if (instance !== undefined) {
    const record = await readOwner(lockFile);
    if (record?.instance === instance) await rm(ownerFileOf(lockFile), { force: true });
  }
  await rm(aside, { recursive: true, force: true });
  return true;
}
