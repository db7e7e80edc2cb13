import { type Schedule, scheduleWithTimer } from "@mediagate/io";

/**
 * Idle timers of the slots of one sandbox with non-persistent settings: a slot that goes
 * `idleMs` without use is handed to `onIdle` (which cleans it up). A slot with calls in
 * flight is never timed; its last call re-arms the timer. `schedule` makes the timers
 * (default {@link scheduleWithTimer}; tests fire them by hand).
 */
export class IdleSlots {
  readonly #idleMs: number;
  readonly #onIdle: (slot: string) => void;
  readonly #schedule: Schedule;
  readonly #timers = new Map<string, () => void>();
  readonly #busy = new Map<string, number>();

  constructor(
    idleMs: number,
    onIdle: (slot: string) => void,
    schedule: Schedule = scheduleWithTimer,
  ) {
    this.#idleMs = idleMs;
    this.#onIdle = onIdle;
    this.#schedule = schedule;
  }

  /** (Re)starts the slot's timer, unless a call is in flight on it. */
  touch(slot: string): void {
    this.cancel(slot);
    if (this.isBusy(slot)) return;
    const cancel = this.#schedule(() => {
      if (this.#timers.get(slot) !== cancel) return;
      this.#timers.delete(slot);
      if (!this.isBusy(slot)) this.#onIdle(slot);
    }, this.#idleMs);
    this.#timers.set(slot, cancel);
  }

  /** Runs `fn` with the slot marked busy; the timer restarts when the last call ends. */
  async using<T>(slot: string, fn: () => Promise<T>, stillHeld: () => boolean): Promise<T> {
    this.#busy.set(slot, (this.#busy.get(slot) ?? 0) + 1);
    this.cancel(slot);
    try {
      return await fn();
    } finally {
      const left = (this.#busy.get(slot) ?? 1) - 1;
      if (left > 0) this.#busy.set(slot, left);
      else this.#busy.delete(slot);
      if (stillHeld()) this.touch(slot);
    }
  }

  /** True while a call runs on the slot. */
  isBusy(slot: string): boolean {
    return (this.#busy.get(slot) ?? 0) > 0;
  }

  cancel(slot: string): void {
    this.#timers.get(slot)?.();
    this.#timers.delete(slot);
  }

  cancelAll(): void {
    for (const cancel of this.#timers.values()) cancel();
    this.#timers.clear();
  }
}
