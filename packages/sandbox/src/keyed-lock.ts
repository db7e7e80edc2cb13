/**
 * In-process mutual exclusion per key: `run(key, fn)` calls for one key run one after
 * another, in call order; different keys run in parallel. A failing `fn` releases the lock.
 */
export class KeyedLock {
  readonly #tails = new Map<string, Promise<void>>();

  async run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#tails.get(key) ?? Promise.resolve();
    let release!: () => void;
    const tail = new Promise<void>((resolve) => {
      release = resolve;
    });
    const chained = previous.then(() => tail);
    this.#tails.set(key, chained);
    await previous;
    try {
      return await fn();
    } finally {
      release();
      if (this.#tails.get(key) === chained) this.#tails.delete(key);
    }
  }
}
