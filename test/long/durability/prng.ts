import { randomInt } from "node:crypto";

/**
 * A seeded pseudo-random source (mulberry32): the same seed gives the same kill moments,
 * message order and kinds, so a failing run can be replayed with `FAULT_SEED=<seed>`.
 */
export class SeededRandom {
  #state: number;

  constructor(readonly seed: number) {
    this.#state = seed >>> 0;
  }

  /**
   * The seed of `FAULT_SEED` when set, else a fresh one; printed either way so the run can be
   * repeated.
   */
  static fromEnv(label: string): SeededRandom {
    const given = process.env.FAULT_SEED;
    const seed = given === undefined || given === "" ? randomInt(2 ** 31) : Number(given);
    if (!Number.isSafeInteger(seed)) throw new Error(`FAULT_SEED must be an integer, got ${given}`);
    console.log(`[${label}] seed ${seed} (replay with FAULT_SEED=${seed})`);
    return new SeededRandom(seed);
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [min, max]. */
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** One of `items`. */
  pick<T>(items: readonly T[]): T {
    const item = items[Math.floor(this.next() * items.length)];
    if (item === undefined) throw new Error("pick from an empty list");
    return item;
  }

  /** `items` in a random order (a new array). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }
}
