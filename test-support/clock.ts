/**
 * A clock whose time moves only when a test says so, with timers that fire when it reaches
 * them: the shape of the gateway's `ProgressClock` (and the outbox's `schedule`). A test
 * advances it instead of waiting real seconds.
 */
export interface ManualClock {
  now(): number;
  schedule(run: () => void, delayMs: number): () => void;
  /** Moves time on by `ms` and fires, in time order, every timer due by then. */
  advance(ms: number): void;
  /** Delays of the timers armed now (for "is one waiting?" checks). */
  pending(): number[];
}

export function manualClock(startMs = 1_000_000): ManualClock {
  let nowMs = startMs;
  let made = 0;
  const armed = new Map<number, { run: () => void; atMs: number; delayMs: number }>();
  return {
    now: () => nowMs,
    schedule(run, delayMs) {
      const id = made++;
      armed.set(id, { run, atMs: nowMs + Math.max(0, delayMs), delayMs });
      return () => armed.delete(id);
    },
    advance(ms) {
      nowMs += ms;
      for (;;) {
        const due = [...armed.entries()]
          .filter(([, timer]) => timer.atMs <= nowMs)
          .sort(([a, x], [b, y]) => x.atMs - y.atMs || a - b)[0];
        if (due === undefined) return;
        armed.delete(due[0]);
        due[1].run();
      }
    },
    pending: () => [...armed.values()].map((timer) => timer.delayMs),
  };
}
