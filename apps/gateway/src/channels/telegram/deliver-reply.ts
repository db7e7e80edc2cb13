import type { ReadyMedia } from "@mediagate/media";
import type { RenderedText } from "../../delivery/render/render.js";
import { type ReplyPart, replyParts } from "../../delivery/reply-parts.js";
import { earlierOutcome, type Idempotence, sendsAgain } from "../../durable/earlier-outcome.js";
import { mediaStepKey, textStepKey } from "../../durable/step-keys.js";
import type {
  DeliveryOutcome,
  DeliveryProgress,
  DeliveryReport,
  ReplyFormat,
  StepResult,
} from "../types.js";
import { type MediaStep, planDeliverySteps, TelegramTextLimits } from "./delivery-steps.js";
import { failureFacts, TelegramDeliveryError } from "./errors.js";
import {
  haltsDelivery,
  type MediaSendContext,
  type SendResult,
  sendAlbum,
  sendSingle,
} from "./send-media.js";

/** Sends one text part as a message; rejects with a {@link TelegramDeliveryError}. */
export type ChunkSender = (part: RenderedText) => Promise<void>;

/** Sends a long reply's whole text as a document; rejects with a {@link TelegramDeliveryError}. */
export type TextFileSender = (file: Extract<ReplyPart, { kind: "file" }>) => Promise<void>;

/** How the reply's text goes out: its senders, and how many messages it may take. */
export interface TextSenders {
  readonly chunk: ChunkSender;
  readonly file: TextFileSender;
  /** `delivery.maxTextChunks`: past it, the head as messages and the whole as `reply.txt`. */
  readonly maxChunks: number;
  /** How the text is shown (docs/formatting.md); default `plain`. */
  readonly format?: ReplyFormat | undefined;
}

/** The step result an outcome records; none for one still to do (flood wait, abort). */
function stepResultOf(outcome: DeliveryOutcome): StepResult | undefined {
  switch (outcome.status) {
    case "delivered":
      return "sent";
    case "unconfirmed":
      return "unconfirmed";
    case "upload_failed":
      return "failed";
    case "rate_limited":
    case "pending":
      return undefined;
  }
}

/**
 * Runs the steps of one reply (see {@link planDeliverySteps}): skips the steps `progress`
 * says are done, records each one it finishes, and returns one outcome per ready item in
 * plan order. Never throws.
 *
 * Once Telegram answers with a wait over the cap (flood control) the reply stops: more calls
 * would only be refused and prolong the limit. The report then carries `retryAfterSeconds`;
 * the steps not done stay unrecorded for the outbox, their items `rate_limited`. An aborted
 * signal stops it before the next step; the items not sent are `pending`.
 */
export async function deliverReply(
  ctx: MediaSendContext,
  text: string,
  items: readonly ReadyMedia[],
  send: TextSenders,
  progress?: DeliveryProgress,
): Promise<DeliveryReport> {
  return new ReplyRun(ctx, text, items, send, progress).run();
}

class ReplyRun {
  private readonly outcomes: (DeliveryOutcome | undefined)[];
  /** The text's steps: its chunks, or a long reply's head and `reply.txt` (docs/media.md). */
  private readonly chunks: readonly ReplyPart[];
  private readonly results = new Map<string, StepResult>();
  /** Steps an earlier process began and never recorded the end of; resent (at-least-once). */
  private readonly resend = new Set<string>();
  /** When a flood wait ends, on the monotonic clock (`performance.now`). */
  private limitedUntilMs: number | undefined;
  private aborted = false;
  private recordFailed = false;
  /** Telegram's answer when it said the chat is gone for the bot. */
  private unreachable: string | undefined;
  private readonly idempotence: Idempotence;

  constructor(
    private readonly ctx: MediaSendContext,
    private readonly text: string,
    private readonly items: readonly ReadyMedia[],
    private readonly send: TextSenders,
    private readonly progress: DeliveryProgress | undefined,
  ) {
    this.outcomes = items.map(() => undefined);
    // Telegram has no idempotency key: a repeated request posts again. Whether a step cut off
    // mid-send is sent again is the operator's choice, `delivery.ambiguousSends`.
    this.idempotence = ctx.caller.ambiguousSends;
    this.chunks =
      text.trim() === ""
        ? []
        : replyParts(text, {
            maxLength: TelegramTextLimits.messageLength,
            maxChunks: send.maxChunks,
            platform: "telegram",
            format: send.format,
          });
  }

  async run(): Promise<DeliveryReport> {
    await this.settleInterrupted();
    const todo: number[] = [];
    this.items.forEach((item, index) => {
      const result = this.resultOf(mediaStepKey(item.path));
      const earlier = earlierOutcome(item, result, this.idempotence);
      if (earlier === undefined) todo.push(index);
      else this.outcomes[index] = earlier;
    });
    const textDone = this.chunks.every((_, n) => this.resultOf(textStepKey(n)) !== undefined);
    // A reply of one message may ride as a caption: its visible length decides (1024).
    const [only, ...more] = this.chunks;
    const captionText = only?.kind === "text" && more.length === 0 ? only.plain : this.text;
    const steps = planDeliverySteps(
      textDone ? "" : captionText,
      todo.map((index) => (this.items[index] as ReadyMedia).kind),
    );
    for (const step of steps) {
      if (this.halted()) break;
      if (step.type === "text") await this.sendText();
      else await this.sendMedia(step, todo);
    }
    return this.report();
  }

  private resultOf(key: string): StepResult | undefined {
    if (this.resend.has(key)) return this.results.get(key);
    return this.results.get(key) ?? this.progress?.done.get(key);
  }

  /**
   * A step recorded `sending` was cut off between its request and the record of its answer:
   * it may be in the chat. `at-most-once` records it `unconfirmed` and does not send it again;
   * `at-least-once` sends it again.
   */
  private async settleInterrupted(): Promise<void> {
    for (const [key, result] of this.progress?.done ?? []) {
      if (result !== "sending") continue;
      if (sendsAgain(result, this.idempotence)) this.resend.add(key);
      else {
        this.ctx.logger.warn({ key }, "step cut off mid-send; not sent again (at-most-once)");
        await this.record(key, "unconfirmed");
      }
    }
  }

  /**
   * Records that the steps' requests are about to go out (see {@link settleInterrupted}).
   * Under `at-least-once` a cut-off step is sent again anyway, so nothing is recorded.
   */
  private async begin(keys: readonly string[]): Promise<void> {
    if (sendsAgain("sending", this.idempotence)) return;
    for (const key of keys) await this.record(key, "sending", false);
  }

  /** The step's request is known not to have gone out (rate limit, abort before sending). */
  private async unbegin(key: string): Promise<void> {
    if (this.results.has(key) || this.progress === undefined) return;
    try {
      await this.progress.clear(key);
    } catch (error) {
      this.ctx.logger.error(
        { key, ...failureFacts(error, this.ctx.token) },
        "delivery progress could not be recorded",
      );
    }
  }

  /** Stopped by a flood wait or the caller's signal. */
  private halted(): boolean {
    if (this.ctx.signal?.aborted === true) this.aborted = true;
    return this.aborted || this.limitedUntilMs !== undefined;
  }

  private secondsLeft(): number {
    return Math.max(1, Math.ceil(((this.limitedUntilMs ?? 0) - performance.now()) / 1000));
  }

  private async record(key: string, result: StepResult, final = true): Promise<void> {
    if (final) this.results.set(key, result);
    if (this.progress === undefined) return;
    try {
      await this.progress.step(key, result);
    } catch (error) {
      // The message is out; only the record of it is missing. Delivering the rest serves
      // the chat better than stopping; a later resume may repeat this step.
      if (!this.recordFailed) {
        this.recordFailed = true;
        this.ctx.logger.error(
          { key, ...failureFacts(error, this.ctx.token) },
          "delivery progress could not be recorded",
        );
      }
    }
  }

  private halt(error: TelegramDeliveryError): boolean {
    if (error.rateLimited) {
      this.limitedUntilMs = performance.now() + (error.retryAfterSeconds ?? 1) * 1000;
      return true;
    }
    if (error.aborted) {
      this.aborted = true;
      return true;
    }
    return false;
  }

  /** Sends the text parts not done yet, in order: messages, then a long reply's file. */
  private async sendText(): Promise<void> {
    for (const [n, part] of this.chunks.entries()) {
      const key = textStepKey(n);
      if (this.resultOf(key) !== undefined) continue;
      if (this.halted()) return;
      try {
        await this.begin([key]);
        if (part.kind === "text") await this.send.chunk(part);
        else await this.send.file(part);
        await this.record(key, "sent");
      } catch (error) {
        const failure =
          error instanceof TelegramDeliveryError
            ? error
            : new TelegramDeliveryError(
                part.kind === "text" ? "sendMessage" : "sendDocument",
                failureFacts(error, this.ctx.token),
              );
        if (failure.unconfirmed) {
          await this.record(key, "unconfirmed");
          if (this.halt(failure)) return;
          continue;
        }
        if (this.halt(failure)) {
          await this.unbegin(key);
          return;
        }
        if (failure.chatUnreachable) this.unreachable ??= failure.message;
        this.ctx.logger.error({ chunk: n, error: failure.message }, "reply text not delivered");
        await this.record(key, "failed");
      }
    }
  }

  private async sendMedia(step: MediaStep, todo: readonly number[]): Promise<void> {
    const indices = (step.type === "album" ? step.indices : [step.index]).map(
      (i) => todo[i] as number,
    );
    const stepItems = indices.map((index) => this.items[index] as ReadyMedia);
    await this.begin([
      ...stepItems.map((item) => mediaStepKey(item.path)),
      ...(step.caption === undefined ? [] : [textStepKey(0)]),
    ]);
    const first = this.chunks[0];
    const caption = step.caption !== undefined && first?.kind === "text" ? first : undefined;
    const result: SendResult =
      step.type === "album"
        ? await sendAlbum(this.ctx, stepItems, caption)
        : await sendSingle(this.ctx, stepItems[0] as ReadyMedia, caption);
    this.unreachable ??= result.unreachable;
    for (const [n, outcome] of result.outcomes.entries()) {
      const index = indices[n] as number;
      this.outcomes[index] = outcome;
      const stepResult = stepResultOf(outcome);
      if (stepResult !== undefined) await this.record(mediaStepKey(outcome.path), stepResult);
      if (outcome.status === "rate_limited") {
        const untilMs = performance.now() + outcome.retryAfterSeconds * 1000;
        this.limitedUntilMs = Math.max(this.limitedUntilMs ?? 0, untilMs);
      }
      if (outcome.status === "pending") this.aborted = true;
    }
    for (const item of stepItems) await this.unbegin(mediaStepKey(item.path));
    if (step.caption === undefined) return;
    // The caption is the whole text, chunk 0. If its media did not go, the text goes as a message.
    if (result.caption !== undefined) await this.record(textStepKey(0), result.caption);
    else {
      await this.unbegin(textStepKey(0));
      if (!result.outcomes.some(haltsDelivery)) await this.sendText();
    }
  }

  private report(): DeliveryReport {
    const limited = this.limitedUntilMs !== undefined;
    const outcomes = this.outcomes.map((outcome, index): DeliveryOutcome => {
      if (outcome !== undefined) return outcome;
      const path = (this.items[index] as ReadyMedia).path;
      return limited
        ? { status: "rate_limited", path, retryAfterSeconds: this.secondsLeft() }
        : { status: "pending", path };
    });
    // A part refused for good is recorded `failed`: not pending, the outbox says so instead.
    const textPending = this.chunks.some((_, n) => this.resultOf(textStepKey(n)) === undefined);
    return {
      outcomes,
      ...(limited ? { retryAfterSeconds: this.secondsLeft() } : {}),
      ...(textPending ? { textPending: true } : {}),
      ...(this.unreachable === undefined ? {} : { unreachable: this.unreachable }),
    };
  }
}
