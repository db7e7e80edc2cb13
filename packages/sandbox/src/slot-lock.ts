import { mkdir } from "node:fs/promises";
import { resolve } from "node:path";
import { lock } from "proper-lockfile";
import { Defaults } from "./defaults.js";
import { KeyedLock } from "./keyed-lock.js";
import { slotPaths } from "./slot-paths.js";

/** One queue per slot directory for the whole process, whichever Sandbox (profile) asks. */
const inProcess = new KeyedLock();

/** Options of {@link withSlotLock}. */
export interface SlotLockOptions {
  /** Told when the hold was lost while `fn` ran (this process stalled past the stale time). */
  readonly onWarning?: ((message: string, cause?: unknown) => void) | undefined;
}

/**
 * Runs `fn` holding the slot directory's lock: first the process-wide queue keyed by the
 * directory (so the Sandboxes of two profiles sharing a `shared:` slot take turns), then
 * `<home>/sandboxes/locks/docker/<name>.lock` (a directory made atomically by proper-lockfile
 * and refreshed while held) so another gateway process takes turns too.
 * Provisioning, cleanup with its delete and the reaper's delete all run under it, so a slot
 * is never provisioned while it is being deleted. A lock whose holder died is taken over
 * after `Defaults.slotLockStaleMs`; waiting longer than `Defaults.slotLockWaitMs` for a live
 * holder fails.
 * Not reentrant: `fn` must not take the same slot's lock again.
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
    const waitMs = Defaults.slotLockWaitMs;
    const stepMs = 100;
    let release: () => Promise<void>;
    try {
      release = await lock(key, {
        lockfilePath: lockFile,
        realpath: false,
        stale: Defaults.slotLockStaleMs,
        retries: {
          retries: Math.max(1, Math.ceil(waitMs / stepMs)),
          minTimeout: 10,
          maxTimeout: stepMs,
          factor: 1.5,
        },
        onCompromised: (error) => {
          options.onWarning?.(`lost the lock of slot directory ${key} while holding it`, error);
        },
      });
    } catch (error) {
      throw new Error(
        `slot directory ${key} is locked by another process (waited ${waitMs} ms): ${
          error instanceof Error ? error.message : String(error)
        }`,
        { cause: error },
      );
    }
    try {
      return await fn();
    } finally {
      await release().catch(() => undefined);
    }
  });
}
