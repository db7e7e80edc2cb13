import v8 from "node:v8";
import vm from "node:vm";
import { type Clock, systemClock } from "@mediagate/io";

/** Options of {@link IdleCollection}. */
export interface IdleCollectionOptions {
  /** How long without a message before the collection runs. */
  readonly quietMs: number;
  /** The full collection; none (it could not be had): the collection never runs. */
  readonly collect: (() => void) | undefined;
  readonly clock?: Clock;
}

/**
 * Gives back the memory a burst of messages left as garbage, once the gateway has been quiet
 * `quietMs`: one full collection of the main thread's heap, then none until messages come
 * again (docs/operations.md, "Memory").
 *
 * Why: V8 shrinks the heap a burst grew only when its memory reducer runs, and on Node 20 that
 * is left to chance once the process is idle (no allocation, no collection). Measured with
 * `bench:scale --users-list 100,2000` (bench/README, "the heap collected when the messages
 * stop"): a minute after filling 2,000 sessions one run without this kept 191 MB of RSS, where
 * other runs of the same code gave back to 133–147 MB; with it, 143.6–148.2 MB in three runs.
 * A collection took 61–72 ms of the main thread's CPU there, once per quiet spell; a message
 * that arrives during it waits that long.
 */
export class IdleCollection {
  readonly #quietMs: number;
  readonly #collect: (() => void) | undefined;
  readonly #clock: Clock;
  #lastMessageMs: number;
  /** Whether a message came since the last collection. */
  #dirty = false;
  #timer: NodeJS.Timeout | undefined;

  constructor(options: IdleCollectionOptions) {
    this.#quietMs = options.quietMs;
    this.#collect = options.collect;
    this.#clock = options.clock ?? systemClock;
    this.#lastMessageMs = this.#clock.monoMs();
  }

  /** A message arrived: the quiet spell starts again. */
  touch(): void {
    this.#lastMessageMs = this.#clock.monoMs();
    this.#dirty = true;
  }

  /**
   * Runs the collection when messages came since the last one and none for `quietMs`; what
   * the timer of {@link start} calls. Whether it ran.
   */
  check(): boolean {
    if (!this.#dirty || this.#collect === undefined) return false;
    if (this.#clock.monoMs() - this.#lastMessageMs < this.#quietMs) return false;
    this.#dirty = false;
    this.#collect();
    return true;
  }

  /** Checks every `quietMs / 4` (at least a second) until {@link stop}; never keeps the process alive. */
  start(): void {
    if (this.#timer !== undefined || this.#collect === undefined) return;
    this.#timer = setInterval(() => this.check(), Math.max(1_000, this.#quietMs / 4));
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * V8's full collection of this thread's heap (`gc()`), or undefined where it cannot be had.
 * Node 20 offers it only through `--expose-gc`: set here, after start-up, it installs `gc` in
 * contexts made from then on, and one such context hands it out (the way `jest
 * --logHeapUsage` gets it). Node documents flags set after start-up as having undefined
 * behaviour in general; this one only adds that function.
 */
export function fullCollection(): (() => void) | undefined {
  const existing = (globalThis as { gc?: unknown }).gc;
  if (typeof existing === "function") return () => existing();
  try {
    v8.setFlagsFromString("--expose-gc");
    const gc: unknown = vm.runInNewContext("gc");
    return typeof gc === "function" ? () => gc() : undefined;
  } catch {
    return undefined;
  }
}
