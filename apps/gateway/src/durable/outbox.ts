import {
  backoffMs,
  type Clock,
  type Schedule,
  scheduleWithTimer,
  settledWithin,
  stopController,
  systemClock,
} from "@mediagate/io";
import {
  type MediaPlan,
  noticeFor,
  planMedia,
  type ResumedPlan,
  recordPlan,
  resumePlan,
  type TranslateContext,
} from "@mediagate/media";
import type {
  ChannelAdapter,
  DeliveryOutcome,
  DeliveryProgress,
  DeliveryReport,
  Platform,
  StepResult,
  TextFormat,
} from "../channels/types.js";
import { Defaults } from "../defaults.js";
import { type Logger, lazyChild } from "../log.js";
import { type DeliveryItem, deliveryItems } from "./delivery-items.js";
import { deliveryNotice, planNotices, textNotices } from "./notices.js";
import { ReplyTimes } from "./reply-times.js";
import { SessionLeaseLostError } from "./session-leases.js";
import {
  formatStepKey,
  mediaStepKey,
  type OutboxNoticeName,
  parseStepKey,
  textStepKey,
} from "./step-keys.js";
import type { Journal, JournalOutcome, OutboxRecord, OutboxReply } from "./types.js";

/** Defaults of {@link Outbox} (docs/durability.md). */
export const OutboxDefaults = {
  maxAttempts: Defaults.delivery.maxAttempts,
  maxAgeMs: Defaults.delivery.maxAgeSeconds * 1000,
  retryBaseMs: Defaults.delivery.retryBaseMs,
  retryMaxMs: Defaults.delivery.retryMaxMs,
  maxRetryAfterMs: Defaults.delivery.maxRetryAfterMs,
  longestWaitMs: Defaults.delivery.longestWaitMs,
} as const;

/**
 * Opens a reply's media from its turn's slot: a profile runtime's `translateContext`. The
 * outbox takes this one function, not the runtime, so it does not depend on the pipeline.
 */
export type ReplyTranslateContext = (
  slot: string,
  sessionKey: string,
  signal: AbortSignal,
) => TranslateContext;

/** Tuning and wiring of {@link Outbox}. */
export interface OutboxOptions {
  readonly journal: Journal;
  /** The channel that sends for a profile on a platform. */
  readonly channelFor: (profile: string, platform: Platform) => ChannelAdapter | undefined;
  /**
   * A profile's media context (media are planned, and opened again on resume, from the turn's
   * slot); undefined for a profile that is not configured.
   */
  readonly translateContextFor: (profile: string) => ReplyTranslateContext | undefined;
  /** How a profile's replies are shown (docs/formatting.md); default `plain`. */
  readonly formatFor?: ((profile: string) => TextFormat) | undefined;
  readonly logger: Logger;
  readonly maxAttempts?: number | undefined;
  readonly maxAgeMs?: number | undefined;
  /**
   * The wall clock (the times recorded with a reply: its creation, its next attempt) and the
   * monotonic one (a reply's age inside this process). Default `systemClock`; tests step the
   * wall clock alone (docs/durability.md, "Clock steps").
   */
  readonly clock?: Clock | undefined;
  /**
   * Runs `run` after `delayMs` and returns the cancel function (default `setTimeout`,
   * unref'd). Tests inject one to fire a long `retry_after` at once.
   */
  readonly schedule?: Schedule | undefined;
  /**
   * A reply {@link Outbox.resume} took on (a dead process's, or one handed over) is closed,
   * delivered or given up: the sandbox slot whose directory the orphan reap kept for its files
   * may go now.
   */
  readonly onResumedClosed?: ((record: OutboxRecord) => void) | undefined;
}

/** How one delivery attempt ended. */
export type AttemptResult = "delivered" | "rescheduled" | "given_up" | "interrupted";

/** How one delivery attempt ended, and what became of each part of the reply in it. */
export interface AttemptSummary {
  readonly result: AttemptResult;
  /** The text and each file (empty when the attempt failed before the channel answered). */
  readonly deliveries: readonly DeliveryItem[];
  /**
   * The platform's answer when it said the chat is gone for the bot, to the reply or to one of
   * its notices (`DeliveryReport.unreachable`). The reply is recorded as any refused one is.
   */
  readonly unreachable?: string | undefined;
}

/** What one attempt found out besides its result, filled in as it goes. */
interface AttemptFindings {
  readonly deliveries: DeliveryItem[];
  unreachable?: string | undefined;
}

/**
 * Recorded (with the reason as the reply's last error) before the give-up notice goes out: a
 * restart in between finishes giving up instead of delivering the reply after all.
 */
const GivenUpStep = formatStepKey({ kind: "givenUp" });

/** The text the chat gets for a reply the outbox gave up on. */
export function givenUpText(attempts: number, ageMs: number, reason: string): string {
  const minutes = Math.max(1, Math.round(ageMs / 60_000));
  return `⚠️ A reply could not be delivered (${attempts} attempt(s) over ${minutes} min): ${reason}`;
}

/**
 * Whether a chunk of notice `name` that a crash cut off mid-send (left `sending`) is sent again
 * by the next start, whatever `delivery.ambiguousSends` says. The `delivery` and `given_up`
 * notices say that the reply, or part of it, is missing or may be: when the reply's text was
 * itself cut off mid-send (left `unconfirmed`, not sent again), this line is all the chat may
 * get, and a second copy of it costs less than a message answered by nothing at all (two
 * SIGKILLs, one in each send, did that). The `plan` notice (files withheld) is part of the
 * answer and is sent at most once like the reply.
 */
const NoticeResentWhenCutOff: Readonly<Record<OutboxNoticeName, boolean>> = {
  plan: false,
  delivery: true,
  given_up: true,
};

/**
 * Forgets the `sending` marks a crash left on the chunks of the notices
 * {@link NoticeResentWhenCutOff} names, so they are sent again; done before anything of the
 * reply is delivered, since the channel settles every mark it finds in the reply's steps.
 */
async function forgetCutOffNotices(progress: DeliveryProgress, log: Logger): Promise<void> {
  const cutOff = [...progress.done].filter(([step, result]) => {
    const key = parseStepKey(step);
    return (
      result === "sending" && key?.kind === "outboxNoticeStep" && NoticeResentWhenCutOff[key.name]
    );
  });
  for (const [step] of cutOff) await progress.clear(step);
  if (cutOff.length > 0) {
    log.info(
      { keys: cutOff.map(([step]) => step) },
      "notice cut off mid-send by a restart; sending it again",
    );
  }
}

/**
 * The progress of the reply's notice `name`: its steps are kept as `notices:<name>/<step>` in
 * the reply's record, and its `replyId` is `<reply id>/notices:<name>`, so its Discord nonces
 * never collide with the reply's own steps and are the same in every process.
 */
function noticeProgress(progress: DeliveryProgress, name: OutboxNoticeName): DeliveryProgress {
  const scoped = (step: string): string => {
    const inner = parseStepKey(step);
    if (inner === undefined) throw new RangeError(`not a step key: ${step}`);
    return formatStepKey({ kind: "outboxNoticeStep", name, step: inner });
  };
  const done = new Map<string, StepResult>();
  for (const [step, result] of progress.done) {
    const key = parseStepKey(step);
    if (key?.kind === "outboxNoticeStep" && key.name === name)
      done.set(formatStepKey(key.step), result);
  }
  return {
    replyId: `${progress.replyId}/${formatStepKey({ kind: "outboxNotice", name })}`,
    done,
    step: async (step, result) => {
      done.set(step, result);
      await progress.step(scoped(step), result);
    },
    clear: async (step) => {
      done.delete(step);
      await progress.clear(scoped(step));
    },
  };
}

/**
 * A plan of the reply's text as it is, naming no file: it needs no record (one journal commit
 * less per plain reply). A resumed reply without one is planned from its text again, which
 * gives the same plan.
 */
function plainText(plan: MediaPlan, text: string): boolean {
  return plan.outcomes.length === 0 && plan.text === text && !plan.asVoice && !plan.asDocument;
}

/** A plan of text alone (a notice): nothing to upload, nothing to close. */
function textOnlyPlan(text: string): MediaPlan {
  return {
    text,
    asVoice: false,
    asDocument: false,
    outcomes: [],
    ready: () => [],
    dispose: async () => {},
  };
}

/**
 * The outbox (docs/durability.md): a finished turn's reply is recorded before any of it is
 * sent, its media plan before the first send, each step's result after the step, so a
 * restarted gateway finishes what a crash or a stop cut off and never sends a recorded step
 * twice. Every attempt delivers the recorded plan: its files are opened again, with every
 * check, when they are still to send (nothing is kept open across restarts); one gone or
 * refused since gets its notice. A reply held back by a long `retry_after` is scheduled for
 * later, not dropped; attempts and age are capped and a reply given up is reported in its chat.
 */
export class Outbox {
  readonly #journal: Journal;
  readonly #options: OutboxOptions;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #times: ReplyTimes;
  readonly #maxAttempts: number;
  readonly #maxAgeMs: number;
  /** Aborted by {@link stop}: uploads in flight end and stay pending for the next start. */
  readonly #stopping = stopController();
  readonly #timers = new Map<string, () => void>();
  readonly #scheduleRun: Schedule;
  readonly #inFlight = new Set<Promise<unknown>>();
  /** The replies {@link resume} took on that are not closed yet. */
  readonly #resumed = new Set<string>();

  constructor(options: OutboxOptions) {
    this.#options = options;
    this.#journal = options.journal;
    this.#log = options.logger.child({ component: "outbox" });
    this.#clock = options.clock ?? systemClock;
    this.#times = new ReplyTimes(this.#clock, OutboxDefaults.longestWaitMs);
    this.#maxAttempts = options.maxAttempts ?? OutboxDefaults.maxAttempts;
    this.#maxAgeMs = options.maxAgeMs ?? OutboxDefaults.maxAgeMs;
    this.#scheduleRun = options.schedule ?? scheduleWithTimer;
  }

  /** Aborted when the gateway stops. */
  get signal(): AbortSignal {
    return this.#stopping.signal;
  }

  /**
   * Records a finished turn's reply, or a command's answer (`reply.plain`), and closes its
   * journal entry (and those of the messages `merged` into its turn) with `outcome` (default
   * `replied`), before anything is sent.
   */
  async record(
    reply: OutboxReply,
    entryId: number | undefined,
    merged: readonly number[] = [],
    outcome: JournalOutcome = "replied",
  ): Promise<OutboxRecord> {
    const atMs = this.#clock.monoMs();
    const record = await this.#journal.addReply(reply, entryId, merged, outcome);
    this.#times.recorded(record.id, atMs);
    return record;
  }

  /**
   * Sends `record`'s text the chat's own way (a question with buttons; a Discord slash
   * command's ephemeral answer), not by the channel's steps: its first text step is recorded
   * `sending` before, so a crash during `send` leaves the trace a resumed delivery reads by the
   * ambiguity rule (docs/durability.md). `send` resolves `sent` (the record is delivered: true)
   * or `declined` (nothing went out, the mark is forgotten: false, the caller {@link deliver}s
   * it). A `send` that rejects is given up like a failed `sendText` was: logged, not retried
   * (it may have gone out).
   */
  async sendOwnWay(
    record: OutboxRecord,
    send: () => Promise<"sent" | "declined">,
  ): Promise<boolean> {
    const log = lazyChild(this.#log, { replyId: record.id, sessionKey: record.sessionKey });
    const key = textStepKey(0);
    const run = async (): Promise<boolean> => {
      try {
        await this.#journal.step(record.id, key, "sending");
      } catch (error) {
        log.warn({ err: error }, "could not mark the answer as sending; delivering it by steps");
        return false;
      }
      let outcome: "sent" | "declined" | "failed";
      let reason = "";
      try {
        outcome = await send();
      } catch (error) {
        outcome = "failed";
        reason = error instanceof Error ? error.message : String(error);
        log.warn({ err: error }, "could not send the answer");
      }
      if (outcome === "declined") {
        // `record` holds no mark: delivered from it, the text goes out even if this fails.
        await this.#journal
          .clearStep(record.id, key)
          .catch((error: unknown) => log.warn({ err: error }, "could not clear the answer's mark"));
        return false;
      }
      try {
        await this.#journal.step(record.id, key, outcome === "sent" ? "sent" : "unconfirmed");
        await this.#journal.closeReply(
          record.id,
          outcome === "sent" ? "delivered" : "given_up",
          outcome === "sent" ? undefined : reason,
        );
      } catch (error) {
        // Its step is recorded `sending` or `sent`: the next start does not send it blindly again.
        log.error({ err: error }, "the answer's send could not be recorded");
      }
      this.#times.forget(record.id);
      return true;
    };
    const attempt = run();
    this.#track(attempt);
    return attempt;
  }

  /** One delivery attempt of `record`, tracked so {@link stop} can wait for it. */
  deliver(record: OutboxRecord): Promise<AttemptSummary> {
    const found: AttemptFindings = { deliveries: [] };
    const attempt = this.#attempt(record, found).then((result) => {
      if (result === "delivered" || result === "given_up") {
        this.#times.forget(record.id);
        if (this.#resumed.delete(record.id)) this.#options.onResumedClosed?.(record);
      }
      const { deliveries, unreachable } = found;
      return { result, deliveries, ...(unreachable === undefined ? {} : { unreachable }) };
    });
    this.#track(attempt);
    return attempt;
  }

  /**
   * Replies a process that is gone left pending: each is delivered at its time (now, or after
   * its `retry_after`). Times a wall clock stepped back since are read as {@link ReplyTimes}
   * says, and the step is logged once. Resolves once the due ones had their attempt.
   */
  async resume(records: readonly OutboxRecord[]): Promise<void> {
    const due: Promise<unknown>[] = [];
    let stepBackMs = 0;
    for (const record of records) {
      this.#resumed.add(record.id);
      const timing = this.#times.resumed(record);
      stepBackMs = Math.max(stepBackMs, timing.stepBackMs);
      if (timing.waitMs > 0) this.#schedule(record.id, timing.waitMs, () => this.deliver(record));
      else due.push(this.deliver(record));
    }
    if (stepBackMs > 0) {
      this.#log.warn(
        { stepBackMs },
        "the wall clock stepped back since pending replies were recorded: their ages count from now, and retry times too far ahead are due now",
      );
    }
    await Promise.allSettled(due);
  }

  /** Replies waiting for a later attempt (a long `retry_after`). */
  get scheduled(): number {
    return this.#timers.size;
  }

  /**
   * Ends every delivery: uploads in flight are aborted through their signal and stay pending
   * (the next start resumes them from the recorded steps); scheduled ones stay scheduled in
   * the journal. Resolves when the attempts in flight have settled (bounded by `timeoutMs`).
   */
  async stop(timeoutMs: number): Promise<void> {
    for (const cancel of this.#timers.values()) cancel();
    this.#timers.clear();
    this.#stopping.abort(new Error("gateway stopping"));
    await settledWithin(Promise.allSettled([...this.#inFlight]), timeoutMs, { unref: true });
  }

  #track(promise: Promise<unknown>): void {
    this.#inFlight.add(promise);
    void promise.finally(() => this.#inFlight.delete(promise)).catch(() => {});
  }

  #schedule(id: string, delayMs: number, run: () => Promise<unknown>): void {
    this.#timers.get(id)?.();
    const cancel = this.#scheduleRun(() => {
      this.#timers.delete(id);
      void run();
    }, delayMs);
    this.#timers.set(id, cancel);
  }

  async #attempt(record: OutboxRecord, found: AttemptFindings): Promise<AttemptResult> {
    const log = lazyChild(this.#log, { replyId: record.id, sessionKey: record.sessionKey });
    const channel = this.#options.channelFor(record.profile, record.platform);
    const translateContext = this.#options.translateContextFor(record.profile);
    const ageMs = this.#times.ageMs(record);
    if (channel === undefined || translateContext === undefined) {
      // The profile or its channel is no longer configured: nothing can send it.
      log.warn(
        { platform: record.platform },
        "reply for a channel that is not configured; given up",
      );
      await this.#journal.closeReply(record.id, "given_up", "its channel is not configured");
      return "given_up";
    }
    // `record.attempts` counts attempts that failed; one cut off by a stop or crash does not.
    const attempts = record.attempts + 1;
    if (
      attempts > this.#maxAttempts ||
      ageMs > this.#maxAgeMs ||
      record.steps.has(GivenUpStep) // a give-up a stop or crash cut off
    ) {
      return this.#giveUp(record, channel, log, record.lastError ?? "it kept failing");
    }
    const done = new Map(record.steps);
    const signal = this.#stopping.signal;
    const progress = this.#progress(record.id, done);
    let report: DeliveryReport | undefined;
    let planned = record.plan;
    let lostNotices: string[] = [];
    try {
      await this.#journal.fenceReply?.(record.id);
      await forgetCutOffNotices(progress, log);
      const { plan, lost } = await this.#plan(record, translateContext, channel, done, signal);
      try {
        if (planned === undefined && !record.plain && !plainText(plan, record.text)) {
          // Recorded before the first send; a failure here fails the attempt (nothing was sent).
          const made = recordPlan(plan);
          await this.#journal.setPlan(record.id, made);
          planned = made;
        }
        lostNotices = lost.map(noticeFor).filter((line): line is string => line !== undefined);
        if (lost.length > 0)
          log.warn({ lost: lost.map((o) => o.status) }, "files of the recorded plan lost since");
        for (const outcome of plan.outcomes) {
          const { candidates, ...rest } = outcome;
          const summary = "file" in rest ? { ...rest, file: undefined } : rest;
          log.debug({ media: summary, candidates }, `media ${outcome.status}`);
        }
        if (plan.text.trim() !== "" || plan.ready().length > 0) {
          report = await channel.deliver(
            {
              sessionKey: record.sessionKey,
              profile: record.profile,
              target: record.target,
              text: plan.text,
              plan,
              format: record.plain
                ? "verbatim"
                : (this.#options.formatFor?.(record.profile) ?? "plain"),
            },
            { signal, progress },
          );
          for (const outcome of report.outcomes)
            log.debug({ delivery: outcome }, `media ${outcome.status}`);
          found.unreachable ??= report.unreachable;
        }
        found.deliveries.push(...deliveryItems(plan, report, done));
        const notices = planNotices(plan, lost);
        found.unreachable ??= await this.#notice(
          channel,
          record,
          progress,
          "plan",
          notices,
          signal,
        );
      } finally {
        await plan.dispose();
      }
    } catch (error) {
      if (signal.aborted) return "interrupted";
      if (leaseLost(error)) {
        log.warn(
          { err: error },
          "the session's lease was lost: the reply is left to the replica that takes it over",
        );
        return "interrupted";
      }
      const reason = error instanceof Error ? error.message : String(error);
      log.error({ err: error }, "reply delivery attempt failed");
      return this.#retryLater(
        { ...record, plan: planned, steps: done },
        attempts,
        reason,
        undefined,
        channel,
        log,
      );
    }
    if (signal.aborted) {
      log.info("delivery interrupted by the stop; the next start resumes it");
      return "interrupted";
    }
    if (report?.retryAfterSeconds !== undefined) {
      return this.#retryLater(
        { ...record, plan: planned, steps: done },
        attempts,
        `rate limited by ${record.platform} (retry after ${report.retryAfterSeconds} s)`,
        report.retryAfterSeconds * 1000,
        channel,
        log,
      );
    }
    // The channel stopped before every step was done (a refused token, a network that stayed
    // down through the channel's own retries): the steps not recorded are tried again later.
    if (
      report !== undefined &&
      (report.textPending === true || report.outcomes.some((o) => o.status === "pending"))
    ) {
      return this.#retryLater(
        { ...record, plan: planned, steps: done },
        attempts,
        "the delivery stopped before every part of the reply was sent",
        undefined,
        channel,
        log,
      );
    }
    const notices = [
      ...lostNotices,
      ...(report?.outcomes ?? [])
        .map((outcome: DeliveryOutcome) => deliveryNotice(outcome))
        .filter((line): line is string => line !== undefined),
    ];
    notices.unshift(...textNotices(done, record.platform));
    found.unreachable ??= await this.#notice(
      channel,
      record,
      progress,
      "delivery",
      notices,
      signal,
    );
    try {
      await this.#journal.closeReply(record.id, "delivered");
    } catch (error) {
      // Every step is recorded: the next start finds nothing left to send and closes it.
      log.error({ err: error }, "delivered reply could not be closed in the journal");
    }
    return "delivered";
  }

  /**
   * The reply's plan. A recorded one is resumed: the same steps, its files still to send opened
   * again with every check (those whose step is done are not), the ones that no longer pass in
   * `lost`. A reply without one (not attempted yet, or recorded by an older version) is planned
   * from its text.
   */
  async #plan(
    record: OutboxRecord,
    translateContext: ReplyTranslateContext,
    channel: ChannelAdapter,
    done: ReadonlyMap<string, StepResult>,
    signal: AbortSignal,
  ): Promise<ResumedPlan> {
    // The gateway's own words name no file: a `MEDIA:` in them (a task's text in /tasks) is text.
    if (record.plain) return { plan: textOnlyPlan(record.text), lost: [] };
    const ctx = translateContext(record.slot, record.sessionKey, signal);
    const limits = channel.limitsFor?.(record.target) ?? channel.limits;
    if (record.plan === undefined)
      return { plan: await planMedia(record.text, ctx, limits), lost: [] };
    return resumePlan(record.plan, ctx, limits, {
      reopen: (path) => {
        const result = done.get(mediaStepKey(path));
        return result === undefined || result === "sending";
      },
    });
  }

  /** The progress of reply `replyId`: `done` is kept up to date and every step recorded. */
  #progress(replyId: string, done: Map<string, StepResult>): DeliveryProgress {
    return {
      replyId,
      done,
      step: async (key: string, result: StepResult) => {
        done.set(key, result);
        await this.#journal.step(replyId, key, result);
      },
      clear: async (key: string) => {
        if (!done.delete(key)) return;
        await this.#journal.clearStep(replyId, key);
      },
    };
  }

  /**
   * Sends the lines as one message once per reply (the notice `name`), after the channel's own
   * steps and through the channel's step machinery like a reply: its chunks are recorded as
   * `notices:<name>/text:<n>` (Telegram marks them `sending` first), Discord derives their
   * nonces from `<reply id>/notices:<name>`, and `notices:<name>` is recorded once the notice
   * is done, so it is never sent again (step-keys.ts). A crash between its send and its record
   * neither loses it nor, on Discord (same nonce) or under Telegram's `at-most-once`, sends it
   * twice. A notice the platform refuses is recorded `failed` and not tried again; one cut off
   * by the stop is finished by the next start. Resolves with the platform's answer when it said
   * the chat is gone for the bot (`DeliveryReport.unreachable`).
   */
  async #notice(
    channel: ChannelAdapter,
    record: OutboxRecord,
    progress: DeliveryProgress,
    name: OutboxNoticeName,
    lines: readonly string[],
    signal: AbortSignal,
  ): Promise<string | undefined> {
    const key = formatStepKey({ kind: "outboxNotice", name });
    if (lines.length === 0 || progress.done.has(key) || signal.aborted) return undefined;
    const text = lines.join("\n");
    let result: StepResult = "sent";
    let unreachable: string | undefined;
    const steps = noticeProgress(progress, name);
    try {
      const report = await channel.deliver(
        {
          sessionKey: record.sessionKey,
          profile: record.profile,
          target: record.target,
          text,
          plan: textOnlyPlan(text),
        },
        { signal, progress: steps },
      );
      if (report.textPending === true || [...steps.done.values()].includes("failed"))
        result = "failed";
      unreachable = report.unreachable;
    } catch (error) {
      if (!signal.aborted)
        this.#log.warn({ err: error, replyId: record.id, key }, "could not send a notice");
      result = "failed";
    }
    if (signal.aborted) return unreachable;
    await progress.step(key, result);
    return unreachable;
  }

  async #retryLater(
    record: OutboxRecord,
    attempts: number,
    reason: string,
    waitMs: number | undefined,
    channel: ChannelAdapter,
    log: Logger,
  ): Promise<AttemptResult> {
    const backoff = { baseMs: OutboxDefaults.retryBaseMs, maxMs: OutboxDefaults.retryMaxMs };
    const retryAfterMs =
      waitMs === undefined ? undefined : Math.min(waitMs, OutboxDefaults.maxRetryAfterMs);
    const delayMs = backoffMs(attempts, backoff, { retryAfterMs });
    const notBeforeMs = this.#times.notBeforeMs(delayMs);
    if (attempts >= this.#maxAttempts || this.#times.ageMs(record) + delayMs > this.#maxAgeMs) {
      // Counted in the journal too: a restart during the give-up reports the same count.
      await this.#journal
        .attempt(record.id)
        .catch((error: unknown) => log.error({ err: error }, "attempt could not be recorded"));
      return this.#giveUp({ ...record, attempts }, channel, log, reason);
    }
    try {
      await this.#journal.attempt(record.id);
      await this.#journal.reschedule(record.id, notBeforeMs, reason);
    } catch (error) {
      // Still retried by this process; a restart resumes it from its last recorded schedule.
      log.error({ err: error }, "reply schedule could not be recorded");
    }
    log.warn({ delayMs, attempts, reason }, "reply rescheduled");
    const next: OutboxRecord = { ...record, attempts, notBeforeMs, lastError: reason };
    this.#schedule(record.id, delayMs, () => this.deliver(next));
    return "rescheduled";
  }

  /**
   * Gives the reply up and reports it in its chat: the decision is recorded first (the
   * {@link GivenUpStep} step, the reason as the last error), then the notice goes out like the
   * others, then the reply is closed. A stop or crash in between leaves the reply pending; the
   * next start finishes the give-up without sending the notice twice.
   */
  async #giveUp(
    record: OutboxRecord,
    channel: ChannelAdapter,
    log: Logger,
    reason: string,
  ): Promise<AttemptResult> {
    log.error({ attempts: record.attempts, reason }, "reply given up");
    const signal = this.#stopping.signal;
    const progress = this.#progress(record.id, new Map(record.steps));
    if (!progress.done.has(GivenUpStep)) {
      try {
        await this.#journal.reschedule(record.id, record.notBeforeMs, reason);
        await progress.step(GivenUpStep, "failed");
      } catch (error) {
        log.error({ err: error }, "the give-up could not be recorded");
      }
    }
    const text = givenUpText(record.attempts, this.#times.ageMs(record), reason);
    await forgetCutOffNotices(progress, log).catch((error: unknown) =>
      log.error({ err: error }, "a notice cut off mid-send could not be marked to send again"),
    );
    await this.#notice(channel, record, progress, "given_up", [text], signal).catch(
      (error: unknown) => log.warn({ err: error }, "could not report the reply given up"),
    );
    if (signal.aborted) return "interrupted";
    await this.#journal.closeReply(record.id, "given_up", reason);
    return "given_up";
  }
}

/** Whether `error` (or one of its causes) is a fenced write refused for a lost session lease. */
function leaseLost(error: unknown): boolean {
  for (let cause = error; cause instanceof Error; cause = cause.cause) {
    if (cause instanceof SessionLeaseLostError) return true;
  }
  return false;
}
