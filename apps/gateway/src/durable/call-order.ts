/**
 * Keeps the calls of one journal in the order they were made where order matters, without
 * making them all wait for each other: a call waits for the earlier calls that share one of its
 * keys (an entry, a reply, a chat), and a call with no keys given as `"all"` waits for every
 * earlier call and holds up every later one. A call's failure does not stop the ones after it.
 */
export class CallOrder {
  readonly #tails = new Map<string, Promise<void>>();

  /** Runs `work` once the earlier calls on `keys` (or all earlier calls, for `"all"`) settled. */
  run<T>(keys: readonly string[] | "all", work: () => Promise<T>): Promise<T> {
    const before =
      keys === "all"
        ? [...this.#tails.values()]
        : [...keys, AllKey].flatMap((key) => this.#tails.get(key) ?? []);
    const result = Promise.all(before).then(work);
    const settled = result.then(
      () => {},
      () => {},
    );
    const mine = keys === "all" ? [AllKey] : [...new Set(keys)];
    for (const key of mine) this.#tails.set(key, settled);
    void settled.then(() => {
      for (const key of mine) if (this.#tails.get(key) === settled) this.#tails.delete(key);
    });
    return result;
  }
}

/** The key of a call that waits for, and holds up, every other call. */
const AllKey = "\0all";
