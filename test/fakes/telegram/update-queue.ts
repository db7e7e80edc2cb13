import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Update } from "grammy/types";
import { type ApiAnswer, fail, ok } from "./protocol.js";
import type { UpdateInput } from "./updates.js";

interface HeldPoll {
  readonly offset: number;
  readonly limit: number;
  readonly finish: (answer: ApiAnswer | undefined) => void;
  readonly socket: Socket | null;
}

/**
 * A held poll's client that hangs up this soon after another poll ended it had abandoned it
 * before (an aborted poll: a graceful stop's confirming getUpdates follows its abort at once,
 * and the server may read that call before the hang-up): not a second consumer.
 */
const AbandonedWithinMs = 1_000;

const toInt = (value: unknown, fallback: number): number => {
  if (value === undefined || value === null || value === "") return fallback;
  const n = Number(value);
  return Number.isFinite(n) ? Math.trunc(n) : fallback;
};

/**
 * The update queue behind `getUpdates`, with Telegram's semantics: an `offset` confirms (and
 * forgets) every update below it; a call with `timeout > 0` is held until an update is queued
 * or the timeout passes; `timeout` 0 or absent answers at once; a second poll while one is
 * held ends the first with 409 Conflict, as the real server does.
 */
export class UpdateQueue {
  private readonly queue: Update[] = [];
  private nextId = 1;
  private held: HeldPoll | undefined;
  private readonly pushListeners = new Set<() => void>();
  /** Held polls another `getUpdates` ended with 409; `abandoned` once their client hung up. */
  private readonly contested: { abandoned: boolean }[] = [];
  private polled = false;

  /**
   * `getUpdates` calls that came while another consumer's was held open: two consumers polled
   * at once (each ended the other's poll with 409, as Telegram does). A held poll whose client
   * had hung up is not counted ({@link AbandonedWithinMs}).
   */
  get conflicts(): number {
    return this.contested.filter((entry) => !entry.abandoned).length;
  }

  /** The most consumers polling at once so far (more than 1: two consumers). */
  get maxConsumers(): number {
    return this.conflicts > 0 ? 2 : this.polled ? 1 : 0;
  }

  get size(): number {
    return this.queue.length;
  }

  push(input: UpdateInput): Update {
    return this.pushAll([input])[0] as Update;
  }

  /** Queues several updates before a held poll is woken, so one answer can carry them all. */
  pushAll(inputs: readonly UpdateInput[]): Update[] {
    const updates = inputs.map((input) => {
      const update = { ...input, update_id: input.update_id ?? this.nextId } as Update;
      this.nextId = Math.max(this.nextId, update.update_id) + 1;
      this.queue.push(update);
      return update;
    });
    this.wake();
    for (const listener of this.pushListeners) listener();
    return updates;
  }

  /** Calls `listener` after every push (the webhook delivery wakes on it). */
  onPush(listener: () => void): void {
    this.pushListeners.add(listener);
  }

  /** The oldest update not yet confirmed. */
  first(): Update | undefined {
    return this.queue[0];
  }

  /** Every update not yet confirmed, oldest first. */
  pending(): readonly Update[] {
    return [...this.queue];
  }

  /** Confirms one update (a webhook answered 2xx for it). */
  remove(updateId: number): void {
    const index = this.queue.findIndex((update) => update.update_id === updateId);
    if (index >= 0) this.queue.splice(index, 1);
  }

  /** Whether a long poll is being held open right now. */
  get holding(): boolean {
    return this.held !== undefined;
  }

  dropAll(): void {
    this.queue.length = 0;
  }

  /** Resolves with the answer, or undefined when the client went away while held. */
  poll(params: Record<string, unknown>, res: ServerResponse): Promise<ApiAnswer | undefined> {
    const offset = toInt(params.offset, 0);
    const limit = Math.min(100, Math.max(1, toInt(params.limit, 100)));
    const timeoutSeconds = Math.max(0, toInt(params.timeout, 0));
    this.confirm(offset);
    this.polled = true;
    const held = this.held;
    if (held !== undefined) {
      this.contest(held.socket);
      held.finish(
        fail(
          409,
          "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running",
        ),
      );
    }
    const ready = this.take(offset, limit);
    if (ready.length > 0 || timeoutSeconds === 0) return Promise.resolve(ok(ready));
    return new Promise((resolve) => {
      const finish = (answer: ApiAnswer | undefined): void => {
        if (this.held === poll) this.held = undefined;
        clearTimeout(timer);
        res.off("close", onClose);
        resolve(answer);
      };
      const poll: HeldPoll = { offset, limit, finish, socket: res.socket };
      const timer = setTimeout(() => finish(ok(this.take(offset, limit))), timeoutSeconds * 1000);
      const onClose = (): void => {
        if (!res.writableEnded) finish(undefined);
      };
      res.on("close", onClose);
      this.held = poll;
    });
  }

  /** Counts a held poll ended by another one, unless its client hangs up at once. */
  private contest(socket: Socket | null): void {
    const entry = { abandoned: socket === null || socket.destroyed || socket.readableEnded };
    this.contested.push(entry);
    if (entry.abandoned || socket === null) return;
    const since = Date.now();
    const hungUp = (): void => {
      if (Date.now() - since <= AbandonedWithinMs) entry.abandoned = true;
    };
    socket.once("end", hungUp);
    socket.once("close", hungUp);
  }

  /** Ends a held poll with no updates (server shutdown). */
  close(): void {
    this.held?.finish(ok([]));
  }

  private wake(): void {
    const held = this.held;
    if (held === undefined) return;
    const ready = this.take(held.offset, held.limit);
    if (ready.length > 0) held.finish(ok(ready));
  }

  private confirm(offset: number): void {
    if (offset <= 0) return;
    while (this.queue.length > 0 && (this.queue[0]?.update_id ?? offset) < offset)
      this.queue.shift();
  }

  private take(offset: number, limit: number): Update[] {
    return this.queue.filter((update) => update.update_id >= offset).slice(0, limit);
  }
}
