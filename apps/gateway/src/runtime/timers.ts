import type { Schedule } from "@mediagate/sandbox";

/**
 * The real {@link Schedule}: `setTimeout`, unref'd (a pending retry or status edit never keeps
 * the process alive), answering the function that cancels it. Tests hand in their own.
 */
export const scheduleWithTimer: Schedule = (run, delayMs) => {
  const timer = setTimeout(run, delayMs);
  timer.unref();
  return () => clearTimeout(timer);
};
