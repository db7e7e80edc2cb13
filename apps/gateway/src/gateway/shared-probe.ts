import type { Clock } from "@mediagate/io";
import type { ProbeSlot } from "./core.js";

/**
 * `probe()`, one at a time: a caller that comes while it runs shares its answer, and the last
 * answer is reused until it is `ttlMs` old (by the clock's `monoMs`). `probe` must not throw:
 * it turns its failure into an answer.
 */
export function sharedProbe<T>(
  slot: ProbeSlot<T>,
  clock: Clock,
  ttlMs: number,
  probe: () => Promise<T>,
): Promise<T> {
  const last = slot.last;
  if (last !== undefined && clock.monoMs() - last.atMs < ttlMs) return Promise.resolve(last.value);
  slot.running ??= probe().then((value) => {
    slot.last = { atMs: clock.monoMs(), value };
    slot.running = undefined;
    return value;
  });
  return slot.running;
}
