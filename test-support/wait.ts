import { vi } from "vitest";

/**
 * The one polling helper of every package's tests (`packages/*\/test`, `apps/gateway`, `test/`).
 * Tests wait for what the engine, a fake or the gateway does by polling for its effect, never
 * by sleeping a guessed time; the bound is generous and only there so that a broken build fails
 * the test instead of hanging it (nothing is asserted about how long it took).
 */
export const PollDefaults = {
  timeoutMs: 30_000,
  intervalMs: 25,
} as const satisfies { timeoutMs: number; intervalMs: number };

/**
 * Polls `check` (vitest's `vi.waitUntil`, one check at a time) until it returns true; rejects
 * naming `what` when `timeoutMs` passes first, and at once with whatever `check` throws.
 */
export async function waitUntil(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs: number = PollDefaults.timeoutMs,
): Promise<void> {
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
      { timeout: timeoutMs, interval: PollDefaults.intervalMs },
    );
  } catch (error) {
    if (!timedOut) throw error;
    throw new Error(`waitUntil: ${what} did not happen within ${timeoutMs} ms`, { cause: error });
  }
}
