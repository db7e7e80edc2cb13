import {
  backoffMs,
  DeadlineError,
  deadline,
  MediagateError,
  retry,
  type Sleep,
  settledWithin,
  sleep,
  stopController,
} from "@mediagate/io";
import { type Api, GrammyError } from "grammy";
import type { Update } from "grammy/types";
import type { Logger } from "pino";
import { Defaults } from "../../defaults.js";
import { confirmableOffsets, endsInAlbum, groupUpdates, type UpdateUnit } from "./albums.js";
import { failureFacts } from "./errors.js";
import type { HealthTracker } from "./health.js";
import { grammySignal } from "./send-media.js";

/** Tuning of {@link UpdatePoller}; the channel fills it from its options. */
export interface PollingSettings {
  /** How long Telegram holds a getUpdates open when nothing comes (`timeout`). */
  readonly pollTimeoutSeconds: number;
  /** A getUpdates still unanswered this long after its timeout is abandoned and retried. */
  readonly pollTimeoutMarginMs: number;
  /** First wait after a failure; doubles per failure in a row. */
  readonly pollBackoffMinMs: number;
  /** Cap of that wait. */
  readonly pollBackoffMaxMs: number;
  /**
   * When an answer ends inside an album, the wait before asking once more for its other
   * messages (docs/inbound-media.md).
   */
  readonly albumWaitMs: number;
  readonly sleep: Sleep;
}

export const PollingDefaults = {
  pollTimeoutSeconds: Defaults.telegram.pollTimeoutSeconds,
  pollTimeoutMarginMs: Defaults.telegram.pollTimeoutMarginMs,
  pollBackoffMinMs: Defaults.telegram.pollBackoffMinMs,
  pollBackoffMaxMs: Defaults.telegram.pollBackoffMaxMs,
  albumWaitMs: Defaults.telegram.albumWaitMs,
  sleep,
  limit: Defaults.telegram.pollLimit,
  stopWaitMs: Defaults.telegram.stopWaitMs,
  confirmTimeoutMs: Defaults.telegram.confirmTimeoutMs,
} as const satisfies PollingSettings & Record<string, unknown>;

/** What the poller needs besides its settings. */
export interface PollerDependencies {
  readonly api: Api;
  readonly token: string;
  readonly logger: Logger;
  readonly health: HealthTracker;
  readonly allowedUpdates: readonly ("message" | "channel_post" | "callback_query")[];
  /**
   * Hands one update on, or the updates of one album together; resolves once every one of
   * them is recorded, now or before, or found not to be for the core (they are confirmed
   * after that). A rejection keeps them unconfirmed: they are offered again after a backoff.
   * `after` is the unit ahead of this one being handed on (`InboundOptions.after`): the
   * handler records this one at once and runs it only after that one.
   */
  readonly handle: (unit: UpdateUnit, after?: Promise<boolean>) => Promise<void>;
  /**
   * Makes what `handle` resolved for durable against a power cut; called before a getUpdates
   * confirms it. A rejection is a failed poll: nothing is confirmed, and it is tried again.
   */
  readonly flush: () => Promise<void>;
  /** Polling cannot go on (the token was revoked). Called once. */
  readonly onFatal: (error: TelegramPollingError) => void;
}

/** Polling ended for good: Telegram refused the token (401) or does not know the bot (404). Token-free. */
export class TelegramPollingError extends MediagateError {
  override readonly name = "TelegramPollingError";
  readonly code = "MG_TELEGRAM_POLLING_STOPPED";
  readonly platform = "telegram";

  constructor(
    readonly status: number,
    readonly description: string,
  ) {
    super(`Telegram polling stopped: ${status} ${description} (the bot token was refused)`);
  }
}

/** The recorded updates could not be flushed to disk, so no getUpdates confirmed them. */
class FlushError extends MediagateError {
  override readonly name = "FlushError";
  readonly code = "MG_TELEGRAM_FLUSH_FAILED";
}

/** The poll outlived its timeout and margin. */
class PollHungError extends DeadlineError {
  override readonly name = "PollHungError";
  override readonly code = "MG_TELEGRAM_POLL_HUNG";
}

/**
 * Telegram long polling where an update counts as confirmed (the next `offset`) only once it
 * is recorded and flushed to disk: the updates of one answer are handed on together, each run
 * only after the one ahead of it (their records share the journal's commits), then one flush
 * covers them all before the next getUpdates confirms them. The updates of one
 * album are handed on together: an answer that ends inside an album is completed by one more
 * poll from the same offset after `albumWaitMs`, and the offset never confirms an update of a
 * unit not yet handed on and recorded (`albums.ts`). Failures never end the loop except a
 * refused token: network errors, 5xx, 409 Conflict, hung polls and failed flushes back off
 * (1 s doubling to 60 s) and poll again; an update whose handler rejects is offered again
 * after the same backoff, and the ones after it wait, recorded and not run.
 */
export class UpdatePoller {
  private offset = 0;
  /** The offset the last answered getUpdates carried: Telegram has forgotten what is below. */
  private confirmedOffset = 0;
  /** Updates below this offset are recorded and flushed: a getUpdates may confirm them. */
  private flushedOffset = 0;
  private readonly stopping = stopController();
  private loop: Promise<void> | undefined;

  constructor(
    private readonly deps: PollerDependencies,
    private readonly settings: PollingSettings,
  ) {}

  start(): void {
    this.loop ??= this.run().catch((error: unknown) => {
      this.deps.logger.error(
        failureFacts(error, this.deps.token),
        "telegram polling stopped unexpectedly",
      );
    });
  }

  /**
   * Aborts the poll in flight at once, lets an update being recorded finish (bounded), then
   * confirms the recorded updates with one short getUpdates. A failed confirmation is only
   * logged: those updates come again and the journal knows them. `confirm: false` (a replica
   * losing its lease, docs/cluster.md) sends nothing more: the next leader gets them again.
   */
  async stop({ confirm = true }: { confirm?: boolean } = {}): Promise<void> {
    const loop = this.loop;
    if (loop === undefined || this.stopping.signal.aborted) return;
    this.stopping.abort();
    await settledWithin(loop, PollingDefaults.stopWaitMs);
    if (!confirm) return;
    if (this.offset > this.confirmedOffset && this.deps.health.current !== "failed") {
      try {
        await this.flush();
        await this.deps.api.getUpdates(
          { offset: this.offset, timeout: 0, limit: 1 },
          grammySignal(AbortSignal.timeout(PollingDefaults.confirmTimeoutMs)),
        );
        this.confirmedOffset = this.offset;
      } catch (error) {
        this.deps.logger.warn(
          { offset: this.offset, ...failureFacts(error, this.deps.token) },
          "telegram stop could not confirm handled updates; they will be offered again",
        );
      }
    }
    this.deps.health.set("stopped");
  }

  private get stopped(): boolean {
    return this.stopping.signal.aborted;
  }

  /** The wait after `failures` failures in a row, or the platform's `retry_after` when longer. */
  private backoffMs(failures: number, retryAfterMs?: number): number {
    const { pollBackoffMinMs: baseMs, pollBackoffMaxMs: maxMs } = this.settings;
    return backoffMs(failures, { baseMs, maxMs }, { retryAfterMs, honour: "atLeast" });
  }

  /** Waits `ms`, or less when the poller stops. */
  private async pause(ms: number): Promise<void> {
    await this.settings.sleep(ms, this.stopping.signal).catch(() => undefined);
  }

  private async run(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      let updates: Update[];
      try {
        // After a failure the first poll is a short one, so the channel is known to be up
        // again at once, not only when a long poll ends (up to its timeout later).
        updates = await this.poll(failures > 0 ? 0 : this.settings.pollTimeoutSeconds);
      } catch (error) {
        if (this.stopped) return;
        failures++;
        if (!(await this.pollFailed(error, failures))) return;
        continue;
      }
      failures = 0;
      this.deps.health.ok();
      if (endsInAlbum(updates) && updates.length < PollingDefaults.limit) {
        updates = await this.completeAlbum(updates);
        if (this.stopped) return;
      }
      const units = groupUpdates(updates);
      const offsets = confirmableOffsets(units, this.offset);
      // Every unit is handed on at once, each told of the one ahead of it: their records reach
      // the journal together (one commit and one trip to its thread, where one at a time made
      // the poller wait a trip per update and capped the rate: bench/README.md, issue 31),
      // and the handler runs each only after the one ahead of it was handed on. An album is
      // handed on alone, after the units ahead of it and before the ones behind: its handler
      // first asks the journal which of its items it holds, so its record would come behind
      // theirs, and the journal's order is the order a restart runs what it left.
      let ahead: Promise<boolean> | undefined;
      const handed: Promise<boolean>[] = [];
      for (const unit of units) {
        const album = unit.length > 1;
        if (album && ahead !== undefined && !(await ahead)) break;
        ahead = this.deliver(unit, album ? undefined : ahead);
        handed.push(ahead);
        if (album && !(await ahead)) break;
      }
      for (const [index, done] of handed.entries()) {
        if (!(await done)) return;
        this.offset = Math.max(this.offset, offsets[index + 1] as number);
      }
    }
  }

  /**
   * The answer `updates` with the rest of the album it ends in: after `albumWaitMs`, one
   * getUpdates from the same offset (so nothing is confirmed), answered at once. A failure
   * keeps what there is; the album's later messages then come as a message of their own.
   */
  private async completeAlbum(updates: Update[]): Promise<Update[]> {
    await this.pause(this.settings.albumWaitMs);
    if (this.stopped) return updates;
    try {
      const again = await this.poll(0);
      return again.length >= updates.length ? again : updates;
    } catch (error) {
      this.deps.logger.debug(
        failureFacts(error, this.deps.token),
        "telegram getUpdates for the rest of an album failed; handing on what came",
      );
      return updates;
    }
  }

  /** Flushes the recorded updates that a getUpdates from {@link offset} would confirm. */
  private async flush(): Promise<void> {
    const offset = this.offset;
    if (offset <= this.flushedOffset) return;
    try {
      await this.deps.flush();
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new FlushError(reason, { cause: error });
    }
    this.flushedOffset = offset;
  }

  private async poll(pollTimeoutSeconds: number): Promise<Update[]> {
    await this.flush();
    const timeoutMs = pollTimeoutSeconds * 1000 + this.settings.pollTimeoutMarginMs;
    const offset = this.offset;
    const updates = await deadline(
      (signal) =>
        this.deps.api.getUpdates(
          {
            offset,
            timeout: pollTimeoutSeconds,
            limit: PollingDefaults.limit,
            allowed_updates: [...this.deps.allowedUpdates],
          },
          grammySignal(signal),
        ),
      {
        timeoutMs,
        what: "getUpdates",
        signal: this.stopping.signal,
        timeoutError: () => new PollHungError("getUpdates", timeoutMs),
      },
    );
    this.confirmedOffset = offset;
    return updates;
  }

  /** Logs and reports a failed poll, then waits; `false` when polling must end. */
  private async pollFailed(error: unknown, failures: number): Promise<boolean> {
    const { logger, health, token } = this.deps;
    const status = error instanceof GrammyError ? error.error_code : undefined;
    if (status === 401 || status === 404) {
      const facts = failureFacts(error, token);
      health.set("failed", `getUpdates: ${status} ${facts.description}`);
      logger.error(facts, "telegram refused the bot token; polling stopped");
      this.deps.onFatal(new TelegramPollingError(status, facts.description));
      return false;
    }
    const retryAfterMs =
      error instanceof GrammyError && error.parameters.retry_after !== undefined
        ? error.parameters.retry_after * 1000
        : undefined;
    const delayMs = this.backoffMs(failures, retryAfterMs);
    if (error instanceof FlushError) {
      health.set("retrying", `recorded updates not synced to disk: ${error.message}`);
      logger.error(
        { err: error.cause, delayMs },
        "the journal could not sync recorded telegram updates to disk; they stay unconfirmed and are synced again before the next poll",
      );
    } else if (error instanceof PollHungError) {
      health.set("retrying", `getUpdates did not answer within ${error.timeoutMs} ms`);
      logger.warn({ afterMs: error.timeoutMs, delayMs }, "telegram getUpdates hung; polling again");
    } else if (status === 409) {
      const facts = failureFacts(error, token);
      health.set("retrying", `getUpdates: 409 ${facts.description}`);
      logger.error(
        { ...facts, delayMs },
        "another process is polling this bot token (409 Conflict); retrying",
      );
    } else {
      const facts = failureFacts(error, token);
      const code = facts.status === undefined ? "" : `${facts.status} `;
      health.set("retrying", `getUpdates: ${code}${facts.description}`);
      logger.warn({ ...facts, delayMs }, "telegram getUpdates failed; retrying");
    }
    await this.pause(delayMs);
    return !this.stopped;
  }

  /**
   * Hands `unit` on until it is recorded; `false` when stopped first. `after`: the unit ahead
   * of it being handed on (see `handle`).
   */
  private async deliver(unit: UpdateUnit, after?: Promise<boolean>): Promise<boolean> {
    const { logger, health, token } = this.deps;
    const update = unit[0] as Update;
    const recorded = async (attempt: number) => {
      await this.deps.handle(unit, after);
      if (attempt > 1) {
        health.set("up");
        logger.info({ updateId: update.update_id, attempts: attempt }, "telegram update recorded");
      }
    };
    try {
      await retry(recorded, {
        signal: this.stopping.signal,
        sleep: this.settings.sleep,
        onFailure: ({ error, attempt }) => {
          const facts = failureFacts(error, token);
          health.set("retrying", `update ${update.update_id} not recorded: ${facts.description}`);
          if (attempt === 1) {
            logger.error(
              { updateId: update.update_id, ...facts },
              "telegram update could not be recorded; it stays unconfirmed and is offered again",
            );
          }
          return this.backoffMs(attempt);
        },
      });
      return true;
    } catch {
      return false; // the loop only ends unrecorded when the poller stops
    }
  }
}
