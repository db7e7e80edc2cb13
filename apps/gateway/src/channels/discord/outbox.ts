import { type REST, Routes } from "discord.js";
import type { Logger } from "pino";
import { type RetryOptions, withRetry } from "../../delivery/retry.js";
import { splitText } from "../../delivery/split-text.js";
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
  /**
   * @param onUnauthorized called when Discord answers 401 (the token was revoked): the channel
   *   reports itself failed.
   */
  constructor(
    private readonly rest: REST,
    private readonly log: Logger,
    private readonly retry: DiscordRetryOptions | undefined,
    private readonly onUnauthorized: () => void = () => {},
  ) {}

  /**
   * One message, retried per policy with the same `nonce`; resolves with its id. Throws
   * `DiscordRequestError` (401 also calls `onUnauthorized`), `RateLimitedError`, or the abort
   * reason once `signal` aborted.
   */
  async create(
    channelId: string,
    draft: MessageDraft,
    nonce: string,
    signal?: AbortSignal,
  ): Promise<string> {
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
      signal?.throwIfAborted();
      const failure = toRequestError("createMessage", error);
      if (failure instanceof DiscordRequestError && failure.status === 401) this.onUnauthorized();
      throw failure;
    }
  }

  /**
   * Text in chunks of at most 2000 characters, code fences balanced, each with a fresh nonce.
   * Throws if one fails, or with the abort reason when `signal` aborts before a chunk.
   */
  async sendText(
    channelId: string,
    text: string,
    replyTo: string | undefined,
    signal?: AbortSignal,
  ): Promise<void> {
    let reference = replyTo;
    for (const content of splitText(text, { maxLength: DiscordTextLimit })) {
      signal?.throwIfAborted();
      await this.create(channelId, { content, replyTo: reference }, newNonce(), signal);
      reference = undefined;
    }
  }

  /** The typing indicator (Discord shows it ~10 s). Best effort: never throws; gives up on `signal`. */
  async typing(channelId: string, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return;
    try {
      await this.rest.post(Routes.channelTyping(channelId), { signal });
    } catch (error) {
      this.log.debug({ channelId, err: describeError(error) }, "discord typing failed");
    }
  }
}
