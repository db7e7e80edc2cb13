/**
 * Runs `run` after `delayMs`; the function it returns cancels that. Components that keep a
 * timer (an idle slot, a rescheduled reply, a status edit) take one, so tests fire it by hand.
 */
export type Schedule = (run: () => void, delayMs: number) => () => void;

/**
 * The real {@link Schedule}: `setTimeout`, unref'd (a pending retry, idle timer or status edit
 * never keeps the process alive).
 */
export const scheduleWithTimer: Schedule = (run, delayMs) => {
  const timer = setTimeout(run, delayMs);
  timer.unref();
  return () => clearTimeout(timer);
};
