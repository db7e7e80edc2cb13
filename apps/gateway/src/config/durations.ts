import { z } from "zod";

/**
 * The longest delay a Node.js timer waits (2^31 - 1 ms, about 24.8 days). `setTimeout` with a
 * longer one fires after 1 ms instead, so a setting that becomes a timer and is past it would
 * do the opposite of what was written (a drain cut off at once, an approval expired at once).
 */
export const MaxTimerMs = 2 ** 31 - 1;
/** {@link MaxTimerMs} in whole seconds: 2147483. */
export const MaxTimerSeconds = Math.floor(MaxTimerMs / 1000);

/**
 * A whole number of seconds that becomes a timer: at least `min` (default 1, saying `minError`
 * below it), at most {@link MaxTimerSeconds}.
 */
export function timerSeconds(min = 1, minError = "a positive whole number of seconds") {
  return z
    .number()
    .int({ error: "a whole number of seconds" })
    .min(min, { error: minError })
    .max(MaxTimerSeconds, {
      error: `at most ${MaxTimerSeconds} seconds (about 24.8 days, the longest a timer can wait)`,
    });
}

/** A positive whole number of milliseconds that becomes a timer: at most {@link MaxTimerMs}. */
export function timerMs() {
  return z
    .number()
    .int({ error: "a whole number of milliseconds" })
    .positive({ error: "a positive whole number of milliseconds" })
    .max(MaxTimerMs, {
      error: `at most ${MaxTimerMs} ms (about 24.8 days, the longest a timer can wait)`,
    });
}
