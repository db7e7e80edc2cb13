import { noticeFor, type ReadyMedia } from "@mediagate/media";
import { type REST, Routes } from "discord.js";
import type { Logger } from "pino";
import { RateLimitedError, type RetryOptions, withRetry } from "../../delivery/retry.js";
import { splitText } from "../../delivery/split-text.js";
import type { DeliveryOutcome, DeliveryReport, OutboundReply } from "../types.js";
import { batchFiles } from "./batches.js";
import {
  DiscordRequestError,
  describeError,
  discordRetryVerdict,
  toRequestError,
} from "./errors.js";
import { createMessageAttempt, type MessageDraft, newNonce } from "./message-create.js";

/** Discord's message length. Counted in UTF-16 units, which is never fewer than Discord's count. */
export const DiscordTextLimit = 2000;

/** Retry tuning for message creates (the shared policy's options). */
export type DiscordRetryOptions = RetryOptions;

/**
 * Sends to Discord channels through the delivery REST instance. Retries belong to the shared
 * policy alone (discord.js's own retries are off on this instance, see `createDeliveryRest`),
 * and every attempt at one message reuses that message's nonce: a repeated create returns the
 * first message instead of posting again.
 */
export class DiscordOutbox {
  constructor(
    private readonly rest: REST,
    private readonly log: Logger,
    private readonly retry: DiscordRetryOptions | undefined,
  ) {}

  /** One message, retried per policy; resolves with its id. */
  async create(channelId: string, draft: MessageDraft, signal?: AbortSignal): Promise<string> {
    const nonce = newNonce();
    try {
      const created = await withRetry(
        () => createMessageAttempt(this.rest, channelId, draft, nonce, signal),
        {
          classify: discordRetryVerdict,
          options: this.retry,
          signal,
          onRetry: (event) =>
            this.log.warn(
              {
                channelId,
                attempt: event.attempt,
                delayMs: event.delayMs,
                retryAfterSeconds: event.retryAfterSeconds,
                err: describeError(event.error),
              },
              "discord message create failed; retrying with the same nonce",
            ),
        },
      );
      return created.id;
    } catch (error) {
      throw toRequestError("createMessage", error);
    }
  }

  /** Text in chunks of at most 2000 characters, code fences balanced. Throws if one fails. */
  async sendText(
    channelId: string,
    text: string,
    replyTo: string | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    let reference = replyTo;
    for (const content of splitText(text, { maxLength: DiscordTextLimit })) {
      await this.create(channelId, { content, replyTo: reference }, signal);
      reference = undefined;
    }
  }

  /**
   * The reply's text (a failure is logged; the files are still tried, as on Telegram), then
   * its files in messages of up to 10 attachments within `limitBytes`.
   * A file over the chat's limit is not sent (a too-large notice names size and limit); a
   * message Discord refuses is retried file by file so one bad file spares the others; once a
   * rate limit outlasts the policy, the files left are reported `rate_limited`.
   */
  async deliver(
    channelId: string,
    reply: OutboundReply,
    limitBytes: number,
    signal?: AbortSignal,
  ): Promise<DeliveryReport> {
    const ready = reply.plan.ready();
    const outcomes = new Map<ReadyMedia, DeliveryOutcome>();
    let replyTo = reply.target.replyToMessageId;
    if (reply.text.trim() !== "") {
      try {
        await this.sendText(channelId, reply.text, replyTo, signal);
        replyTo = undefined;
      } catch (error) {
        this.log.error(
          { channelId, err: describeError(error) },
          "discord reply text not delivered",
        );
      }
    }
    const { batches, tooLarge } = batchFiles(ready, limitBytes);
    const notices: string[] = [];
    for (const item of tooLarge) {
      const notice = noticeFor({ ...item, status: "too_large", limit: limitBytes });
      outcomes.set(item, {
        status: "upload_failed",
        path: item.path,
        error: notice ?? "too large",
      });
      if (notice !== undefined) notices.push(notice);
    }
    const queue = [...batches];
    let rateLimited: RateLimitedError | undefined;
    while (queue.length > 0) {
      const batch = queue.shift()!;
      if (rateLimited !== undefined || signal?.aborted) {
        for (const item of batch) outcomes.set(item, skipped(item, rateLimited));
        continue;
      }
      try {
        await this.create(channelId, { files: batch, replyTo }, signal);
        replyTo = undefined;
        for (const item of batch)
          outcomes.set(item, { status: "delivered", path: item.path, kind: item.kind });
      } catch (error) {
        this.log.warn(
          { channelId, files: batch.map((item) => item.filename), err: describeError(error) },
          "discord attachment upload failed",
        );
        if (error instanceof RateLimitedError) {
          rateLimited = error;
          for (const item of batch) outcomes.set(item, skipped(item, error));
        } else if (batch.length > 1 && isRefusal(error) && !signal?.aborted) {
          queue.unshift(...batch.map((item) => [item]));
        } else {
          const message = error instanceof Error ? error.message : String(error);
          for (const item of batch)
            outcomes.set(item, { status: "upload_failed", path: item.path, error: message });
        }
      }
    }
    if (notices.length > 0) {
      await this.sendText(channelId, notices.join("\n"), undefined, signal).catch(
        (error: unknown) =>
          this.log.warn({ channelId, err: describeError(error) }, "discord notice failed"),
      );
    }
    return { outcomes: ready.map((item) => outcomes.get(item)!) };
  }

  /** The typing indicator (Discord shows it ~10 s). Best effort: never throws. */
  async typing(channelId: string): Promise<void> {
    try {
      await this.rest.post(Routes.channelTyping(channelId));
    } catch (error) {
      this.log.debug({ channelId, err: describeError(error) }, "discord typing failed");
    }
  }
}

/** Discord said no to the request itself (4xx other than 429), as opposed to failing. */
function isRefusal(error: unknown): boolean {
  return (
    error instanceof DiscordRequestError &&
    error.status !== undefined &&
    error.status >= 400 &&
    error.status < 500
  );
}

function skipped(item: ReadyMedia, rateLimited: RateLimitedError | undefined): DeliveryOutcome {
  return rateLimited === undefined
    ? { status: "upload_failed", path: item.path, error: "delivery aborted" }
    : { status: "rate_limited", path: item.path, retryAfterSeconds: rateLimited.retryAfterSeconds };
}
