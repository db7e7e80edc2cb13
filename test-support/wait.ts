import { vi } from "vitest";

/**
 * The one polling module of every package's tests (`packages/*\/test`, `apps/gateway`, `test/`,
 * the long suite's helpers). Tests wait for what the engine, a fake or the gateway does by
 * polling for its effect, never by sleeping a guessed time; the bound is generous and only
 * there so that a broken build fails the test instead of hanging it (nothing is asserted about
 * how long it took). Three shapes of one loop:
 *
 * - {@link waitUntil}: a condition, failing the test when it never holds;
 * - {@link waitFor}: an assertion (`expect(…)`), retried until it passes;
 * - {@link pollFor}: a value, `undefined` when none came, for callers that report a missing
 *   event with their own figures (the long suite).
 */
export const PollDefaults = {
  timeoutMs: 30_000,
  intervalMs: 25,
} as const satisfies { timeoutMs: number; intervalMs: number };

/**
 * Calls `check` every `intervalMs` (vitest's `vi.waitUntil`, one check at a time, real timers
 * even under fake ones) until it returns true: answers true then, false when `timeoutMs`
 * passes first; rejects at once with whatever `check` throws.
 */
async function poll(
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  intervalMs: number,
): Promise<boolean> {
  let timedOut = true;
  try {
    await vi.waitUntil(
      async () => {
        try {
          return await check();
        } catch (error) {
          timedOut = false;
          throw error;
        }
      },
      { timeout: timeoutMs, interval: intervalMs },
    );
    return true;
  } catch (error) {
    if (!timedOut) throw error;
    return false;
  }
}

/**
 * Polls `check` until it returns true; rejects naming `what` when `timeoutMs` passes first,
 * and at once with whatever `check` throws.
 */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number = PollDefaults.timeoutMs,
): Promise<void> {
  if (!(await poll(check, timeoutMs, PollDefaults.intervalMs))) {
    throw new Error(`waitUntil: ${what} did not happen within ${timeoutMs} ms`);
  }
}

/**
 * Retries `assertion` until it stops throwing (`() => expect(received).toHaveLength(1)`) and
 * answers what it returned. When `timeoutMs` passes first, rejects with the assertion's last
 * error, so the test reports the diff of the last try.
 */
export async function waitFor<T>(
  assertion: () => T | Promise<T>,
  timeoutMs: number = PollDefaults.timeoutMs,
): Promise<T> {
  let last: { error: unknown } | undefined;
  let passed: { value: T } | undefined;
  const done = await poll(
    async () => {
      try {
        passed = { value: await assertion() };
        return true;
      } catch (error) {
        last = { error };
        return false;
      }
    },
    timeoutMs,
    PollDefaults.intervalMs,
  );
  if (done && passed !== undefined) return passed.value;
  if (last !== undefined) throw last.error;
  throw new Error(`waitFor: the assertion did not finish within ${timeoutMs} ms`);
}

/**
 * Polls `check` until it answers something other than `undefined` and answers that, or
 * `undefined` once `timeoutMs` passed: the caller decides what a missing event means (and
 * says so with its figures). Rejects at once with whatever `check` throws. `intervalMs`
 * spaces out checks that are costly (a container census).
 */
export async function pollFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs: number = PollDefaults.timeoutMs,
  intervalMs: number = PollDefaults.intervalMs,
): Promise<T | undefined> {
  let found: T | undefined;
  const done = await poll(
    async () => {
      found = await check();
      return found !== undefined;
    },
    timeoutMs,
    intervalMs,
  );
  return done ? found : undefined;
}
