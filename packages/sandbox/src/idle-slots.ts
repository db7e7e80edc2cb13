/**
 * Idle timers of the slots of one sandbox with non-persistent settings: a slot that goes
 * `idleMs` without use is handed to `onIdle` (which cleans it up). A slot with calls in
 * flight is never timed; its last call re-arms the timer. Timers are `unref()`ed, so they
 * never keep the process alive.
 */
export class IdleSlots {
  readonly #idleMs: number;
  readonly #onIdle: (slot: string) => void;
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #busy = new Map<string, number>();

  constructor(idleMs: number, onIdle: (slot: string) => void) {
    this.#idleMs = idleMs;
    this.#onIdle = onIdle;
  }

  /** (Re)starts the slot's timer, unless a call is in flight on it. */
  touch(slot: string): void {
    this.cancel(slot);
    if (this.isBusy(slot)) return;
    const timer = setTimeout(() => {
      this.#timers.delete(slot);
      if (!this.isBusy(slot)) this.#onIdle(slot);
    }, this.#idleMs);
    timer.unref();
    this.#timers.set(slot, timer);
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
    clearTimeout(this.#timers.get(slot));
    this.#timers.delete(slot);
  }

  cancelAll(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer);
    this.#timers.clear();
  }
}
