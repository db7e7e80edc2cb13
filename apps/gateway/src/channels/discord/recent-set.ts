/**
 * A set of the `max` most recently added values: adding one already held makes it the most
 * recent again, and adding one past `max` drops the least recent. For what a long-running
 * process notes of each thing it has seen (the threads the bot answered in), which must not
 * grow with every one it ever saw. A `Set` iterates in insertion order: the least recent first.
 */
export class RecentSet<T> {
  readonly #values = new Set<T>();
  readonly #max: number;

  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1) {
      throw new RangeError(`max must be a positive integer, got ${max}`);
    }
    this.#max = max;
  }

  add(value: T): void {
    this.#values.delete(value);
    this.#values.add(value);
    if (this.#values.size <= this.#max) return;
    const oldest = this.#values.values().next();
    if (oldest.done !== true) this.#values.delete(oldest.value);
  }

  has(value: T): boolean {
    return this.#values.has(value);
  }

  get size(): number {
    return this.#values.size;
  }
}
