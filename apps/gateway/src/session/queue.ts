import { MediagateError } from "@mediagate/io";
import { Defaults } from "../defaults.js";

/**
 * A queued unit of work for one session; it receives the signal `/stop` aborts. It resolves
 * {@link RunLater} when it may not run yet: it goes back into its session's queue, in its
 * place by `order` ({@link TurnQueue.enqueue}), and its promise does not settle yet.
 */
// biome-ignore lint/suspicious/noConfusingVoidType: a job that runs returns nothing, as any async function.
export type TurnJob = (signal: AbortSignal) => Promise<void | typeof RunLater>;

/** What a {@link TurnJob} resolves to go back into its session's queue. */
export const RunLater = "later";

/** How an enqueued job ended. */
export type TurnOutcome = "done" | "failed" | "dropped";

/** The queue refuses work after {@link TurnQueue.close}. */
export class QueueClosedError extends MediagateError {
  override readonly name = "QueueClosedError";
  readonly code = "MG_QUEUE_CLOSED";
  constructor(readonly sessionKey: string) {
    super(`turn queue is closed; refused work for ${sessionKey}`);
  }
}

interface Entry {
  readonly job: TurnJob;
  readonly settle: (outcome: TurnOutcome) => void;
  /** Its place in the session's queue (a journal entry id): lower runs first. */
  readonly order: number | undefined;
}

interface SessionLane {
  readonly pending: Entry[];
  running?: AbortController | undefined;
  /** The running turn handed its reply over for delivery ({@link TurnQueue.replied}). */
  replied: boolean;
  /** The running job's `order`. */
  runningOrder?: number | undefined;
  /** The running turn holds its session and runs ({@link TurnQueue.admitted}). */
  admitted: boolean;
  waiting: boolean;
  /** Set by {@link TurnQueue.holdBack}: the lane starts nothing until it resolves. */
  heldBack?: Promise<void> | undefined;
  /** Holds of {@link TurnQueue.hold} not released yet: the lane starts nothing while any is. */
  held: number;
  /** Resolves when the running job ended (at once when none runs). */
  ended: Promise<void>;
}

/** Options of {@link TurnQueue}. */
export interface TurnQueueOptions {
  /**
   * Turns running at once across all sessions, not counting those delivering their reply
   * ({@link TurnQueue.replied}). Default: `Defaults.concurrency`.
   */
  readonly concurrency?: number;
  /** Called when a job throws (the queue itself never rejects). */
  readonly onError?: (sessionKey: string, error: unknown) => void;
}

/** Defaults of {@link TurnQueue}. */
export const TurnQueueDefaults = {
  concurrency: Defaults.concurrency,
} as const satisfies TurnQueueOptions;

/**
 * Per-session FIFO with a global cap (docs/sessions.md): one turn at a time per session, in arrival
 * order, except that a job with an `order` (its journal entry id, the order the messages were
 * received in) goes before the waiting jobs of a higher one (docs/cluster.md: a message handed
 * over by another replica may arrive after a later one); different sessions run in parallel up
 * to `concurrency` (a turn delivering its reply no longer counts), admitted in the order they
 * became ready. `/stop` uses {@link abortRunning} and {@link dropQueued}, which bypass the queue.
 */
export class TurnQueue {
  readonly #concurrency: number;
  readonly #onError: ((sessionKey: string, error: unknown) => void) | undefined;
  readonly #lanes = new Map<string, SessionLane>();
  readonly #ready: string[] = [];
  readonly #idleWaiters: (() => void)[] = [];
  /** Jobs running, those delivering their reply included ({@link active}). */
  #active = 0;
  /**
   * Jobs counted against `concurrency`: running ones that have not handed their reply over
   * for delivery ({@link replied}).
   */
  #working = 0;
  #closed = false;
  #stopping = false;

  constructor(options: TurnQueueOptions = {}) {
    this.#concurrency = options.concurrency ?? TurnQueueDefaults.concurrency;
    if (!Number.isInteger(this.#concurrency) || this.#concurrency < 1) {
      throw new RangeError(`concurrency must be a positive integer, got ${this.#concurrency}`);
    }
    this.#onError = options.onError;
  }

  /**
   * Queues `job` for `sessionKey`, before the waiting jobs of a higher `order`; resolves when
   * it has run, failed, or been dropped.
   */
  enqueue(sessionKey: string, job: TurnJob, order?: number): Promise<TurnOutcome> {
    if (this.#closed) return Promise.reject(new QueueClosedError(sessionKey));
    return new Promise<TurnOutcome>((settle) => {
      const lane = this.#lane(sessionKey);
      insertInOrder(lane.pending, { job, settle, order });
      this.#markReady(sessionKey, lane);
      this.#pump();
    });
  }

  /** Messages waiting (not running) for a session. */
  queued(sessionKey: string): number {
    return this.#lanes.get(sessionKey)?.pending.length ?? 0;
  }

  /**
   * The session's running job is about to resolve {@link RunLater} and must not start again
   * (nor any other of the session's) before `until` resolves: it gives up its place among the
   * `concurrency` running turns while it waits (docs/cluster.md, a turn waiting for an older
   * message held by another replica, whose own turns may be waiting the same way).
   */
  holdBack(sessionKey: string, until: Promise<void>): void {
    const lane = this.#lanes.get(sessionKey);
    if (lane?.running === undefined) return;
    const heldBack = until.then(() => {
      if (lane.heldBack !== heldBack) return;
      lane.heldBack = undefined;
      if (this.#lanes.get(sessionKey) !== lane) return;
      this.#markReady(sessionKey, lane);
      this.#pump();
    });
    lane.heldBack = heldBack;
  }

  /**
   * Holds the session's lane until the returned function is called (once; more calls do
   * nothing): its running turn goes on, but no other turn of the session starts, so `/stop`
   * and `/reset` can remove the session's container knowing no turn of the session starts
   * in it meanwhile. Messages queued meanwhile wait, in their order.
   */
  hold(sessionKey: string): () => void {
    const lane = this.#lane(sessionKey);
    lane.held++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      lane.held--;
      if (this.#lanes.get(sessionKey) !== lane) return;
      if (this.#forgetIfIdle(sessionKey, lane)) return;
      this.#markReady(sessionKey, lane);
      this.#pump();
    };
  }

  /**
   * Resolves when the session's running turn has ended, if it handed its reply over for
   * delivery ({@link replied}): the delivery attempt opens the reply's files on the host (or
   * in the container), so `/stop` and `/reset` wait for it before removing them
   * (docs/sessions.md, "Busy sessions"). Resolves at once when no turn of the session delivers.
   */
  delivered(sessionKey: string): Promise<void> {
    const lane = this.#lanes.get(sessionKey);
    return lane?.running !== undefined && lane.replied ? lane.ended : Promise.resolve();
  }

  /**
   * How many of the session's jobs a job of `order` queued now ({@link enqueue}) would wait
   * for, as its chat is told (docs/sessions.md, "Busy sessions"): the waiting ones not of a
   * higher order (all of them for a job without one), and the running turn unless it handed
   * its reply over ({@link replied}) or it is of a higher order and not {@link admitted} yet
   * (it goes back behind this one: docs/cluster.md).
   */
  aheadOf(sessionKey: string, order?: number): number {
    const lane = this.#lanes.get(sessionKey);
    if (lane === undefined) return 0;
    const goesBack =
      order !== undefined &&
      lane.runningOrder !== undefined &&
      lane.runningOrder > order &&
      !lane.admitted;
    const running = lane.running !== undefined && !lane.replied && !goesBack ? 1 : 0;
    return running + placeOf(lane.pending, order);
  }

  /**
   * The session's running turn holds its session and runs: it no longer goes back behind an
   * older message ({@link RunLater}), so a message of a lower order queued now waits for it.
   */
  admitted(sessionKey: string): void {
    const lane = this.#lanes.get(sessionKey);
    if (lane?.running !== undefined) lane.admitted = true;
  }

  /** Whether a job of the session with an `order` lower than `order` is waiting. */
  waitingBefore(sessionKey: string, order: number): boolean {
    const pending = this.#lanes.get(sessionKey)?.pending ?? [];
    return pending.some((entry) => entry.order !== undefined && entry.order < order);
  }

  /** Whether a turn of the session is running now. */
  isRunning(sessionKey: string): boolean {
    return this.#lanes.get(sessionKey)?.running !== undefined;
  }

  /** Whether the session has a turn running or messages waiting: it is not idle. */
  busy(sessionKey: string): boolean {
    return this.isRunning(sessionKey) || this.queued(sessionKey) > 0;
  }

  /**
   * Whether a turn of the session is running and has not handed its reply over for delivery
   * yet: what a message arriving now waits behind, as its chat is told (docs/sessions.md).
   */
  isAnswering(sessionKey: string): boolean {
    const lane = this.#lanes.get(sessionKey);
    return lane?.running !== undefined && !lane.replied;
  }

  /**
   * The session's running turn handed its reply over for delivery: what is left of it is
   * that delivery and its bookkeeping, so {@link isAnswering} is false from now on, and it no
   * longer counts against `concurrency`: another session's turn may start. The session's next
   * turn still starts only when this one has ended.
   */
  replied(sessionKey: string): void {
    const lane = this.#lanes.get(sessionKey);
    if (lane?.running === undefined || lane.replied) return;
    lane.replied = true;
    // Its delivery goes on outside the cap (docs/configuration.md, `concurrency`): the cap
    // bounds the commands and model calls running at once, and a slow send or upload to the
    // platform must not keep another session's turn waiting. The session itself stays held.
    this.#working--;
    this.#pump();
  }

  /** Whether {@link close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Messages waiting (not running), across sessions. */
  get pending(): number {
    let count = 0;
    for (const lane of this.#lanes.values()) count += lane.pending.length;
    return count;
  }

  /** Turns running now, across sessions. */
  get active(): number {
    return this.#active;
  }

  /** Aborts the session's running turn, if any; returns whether there was one. */
  abortRunning(sessionKey: string, reason?: unknown): boolean {
    const running = this.#lanes.get(sessionKey)?.running;
    if (running === undefined) return false;
    running.abort(reason);
    return true;
  }

  /**
   * `/stop`, `/reset`, `/new` and `busyMode: interrupt`: aborts the session's running turn
   * unless it already handed its reply over for delivery ({@link replied}): that reply goes out
   * whatever the abort, so the turn no longer counts (docs/sessions.md). Returns whether one
   * was aborted.
   */
  abortAnswering(sessionKey: string, reason?: unknown): boolean {
    return this.isAnswering(sessionKey) && this.abortRunning(sessionKey, reason);
  }

  /** Drops the session's queued (not running) turns; they settle as `dropped`. Returns the count. */
  dropQueued(sessionKey: string): number {
    const lane = this.#lanes.get(sessionKey);
    if (lane === undefined) return 0;
    const dropped = lane.pending.splice(0);
    if (lane.waiting) {
      lane.waiting = false;
      const at = this.#ready.indexOf(sessionKey);
      if (at >= 0) this.#ready.splice(at, 1);
    }
    this.#forgetIfIdle(sessionKey, lane);
    for (const entry of dropped) entry.settle("dropped");
    return dropped.length;
  }

  /** Drops every queued turn and aborts every running one (shutdown). */
  abortAll(reason?: unknown): void {
    for (const sessionKey of [...this.#lanes.keys()]) {
      this.dropQueued(sessionKey);
      this.abortRunning(sessionKey, reason);
    }
  }

  /**
   * The gateway's stop at its drain deadline: refuses new work, drops every queued turn and
   * aborts every running one with `reason`; {@link stopping} is true from here on.
   */
  shutdown(reason: unknown): void {
    this.#closed = true;
    this.#stopping = true;
    this.abortAll(reason);
  }

  /** Whether {@link shutdown} was called (a dropped turn was dropped by it, not by /stop). */
  get stopping(): boolean {
    return this.#stopping;
  }

  /** Refuses new work; queued and running turns continue. */
  close(): void {
    this.#closed = true;
  }

  /** Resolves when nothing runs and nothing is queued. */
  idle(): Promise<void> {
    if (this.#active === 0 && this.#ready.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idleWaiters.push(resolve));
  }

  #lane(sessionKey: string): SessionLane {
    let lane = this.#lanes.get(sessionKey);
    if (lane === undefined) {
      lane = {
        pending: [],
        replied: false,
        admitted: false,
        waiting: false,
        held: 0,
        ended: Promise.resolve(),
      };
      this.#lanes.set(sessionKey, lane);
    }
    return lane;
  }

  /** Forgets a lane with nothing running, waiting or holding it; whether it did. */
  #forgetIfIdle(sessionKey: string, lane: SessionLane): boolean {
    if (lane.running !== undefined || lane.pending.length > 0 || lane.held > 0) return false;
    this.#lanes.delete(sessionKey);
    return true;
  }

  #markReady(sessionKey: string, lane: SessionLane): void {
    if (lane.heldBack !== undefined || lane.held > 0) return;
    if (lane.running === undefined && !lane.waiting && lane.pending.length > 0) {
      lane.waiting = true;
      this.#ready.push(sessionKey);
    }
  }

  #pump(): void {
    while (this.#working < this.#concurrency && this.#ready.length > 0) {
      const sessionKey = this.#ready.shift()!;
      const lane = this.#lanes.get(sessionKey);
      if (lane === undefined) continue;
      lane.waiting = false;
      const entry = lane.pending.shift();
      if (entry === undefined) continue;
      this.#start(sessionKey, lane, entry);
    }
    if (this.#active === 0 && this.#ready.length === 0) {
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
    }
  }

  #start(sessionKey: string, lane: SessionLane, entry: Entry): void {
    const controller = new AbortController();
    lane.running = controller;
    lane.runningOrder = entry.order;
    lane.replied = false;
    lane.admitted = false;
    let ended!: () => void;
    lane.ended = new Promise((resolve) => {
      ended = resolve;
    });
    this.#active++;
    this.#working++;
    let outcome: TurnOutcome = "done";
    let later = false;
    // Each job starts from a fresh microtask so no job inherits the caller's stack.
    void Promise.resolve()
      .then(() => entry.job(controller.signal))
      .then((result) => {
        if (result !== RunLater) return;
        // Aborted (`/stop`, the gateway's stop) before it ran: dropped, as if still queued.
        if (controller.signal.aborted || this.#stopping) outcome = "dropped";
        else later = true;
      })
      .catch((error: unknown) => {
        outcome = "failed";
        this.#onError?.(sessionKey, error);
      })
      .finally(() => {
        this.#active--;
        if (!lane.replied) this.#working--;
        lane.running = undefined;
        lane.replied = false;
        ended();
        if (later) insertInOrder(lane.pending, entry);
        if (!this.#forgetIfIdle(sessionKey, lane)) this.#markReady(sessionKey, lane);
        if (!later) entry.settle(outcome);
        this.#pump();
      });
  }
}

/** Where an entry of `order` goes: before the first waiting entry of a higher order, else last. */
function placeOf(pending: readonly Entry[], order: number | undefined): number {
  const at =
    order === undefined ? -1 : pending.findIndex((e) => e.order !== undefined && e.order > order);
  return at < 0 ? pending.length : at;
}

/** Puts `entry` in its place ({@link placeOf}). */
function insertInOrder(pending: Entry[], entry: Entry): void {
  pending.splice(placeOf(pending, entry.order), 0, entry);
}
