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
 * crashed gateway must not hold its persistent slot hostage for the next one. A lock with no
 * such record (a holder still writing it, or an older version) is taken over once it has not
 * been refreshed for `Defaults.slotLockStaleMs`. Waiting longer than `waitMs` for a live
 * holder fails. Not reentrant: `fn` must not take the same slot's lock again.
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
  const deadline = Date.now() + waitMs;
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
      if (held && (await takeOverFromGoneOwner(lockFile))) continue;
      if (!held || Date.now() >= deadline) {
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
 * Removes the lock when its record names a holder that is gone and still describes this very
 * lock directory; answers whether it did. The directory is first renamed aside and checked
 * again there, so a lock another process made meanwhile is put back, not removed.
 */
async function takeOverFromGoneOwner(lockFile: string): Promise<boolean> {
  const owner = await readOwner(lockFile);
  if (owner === undefined || instanceLiveness(owner.instance) !== "gone") return false;
  const current = await stat(lockFile).catch(() => undefined);
  if (current === undefined || identityOf(current) !== owner.lock) return false;
  const aside = `${lockFile}.gone-${randomUUID()}`;
  try {
    await rename(lockFile, aside);
  } catch {
    return false;
  }
  const moved = await stat(aside).catch(() => undefined);
  if (moved === undefined || identityOf(moved) !== owner.lock) {
    await rename(aside, lockFile).catch(() => undefined);
    return false;
  }
  const record = await readOwner(lockFile);
  if (record?.instance === owner.instance) await rm(ownerFileOf(lockFile), { force: true });
  await rm(aside, { recursive: true, force: true });
  return true;
}
