import { type Client, DiscordAPIError, type Message } from "discord.js";
import type { Logger } from "pino";
import { type RetryOptions, withRetry } from "../../delivery/retry.js";
import type { ChatCursor } from "../types.js";
import { describeError, discordRetryVerdict } from "./errors.js";
import { compareSnowflakes } from "./inbound-queue.js";

/** Discord's page size for `GET /channels/:id/messages`. */
const PageSize = 100;

/** What {@link fetchMissed} needs besides the client. */
export interface FetchMissedOptions {
  /** At most this many messages are fetched per chat (`catchUpMaxMessages`). */
  readonly maxMessages: number;
  readonly retry: RetryOptions | undefined;
  readonly log: Logger;
  /** The channel is stopping: give up. */
  readonly signal: AbortSignal;
  /** Discord answered 401: the token was revoked. */
  readonly onUnauthorized: () => void;
}

/**
 * The messages of one chat that came after `cursor.lastMessageId`, oldest first, fetched through
 * discord.js's REST (`channel.messages.fetch({ after, limit: 100 })`, Discord answers each page
 * newest first) page by page until none are left or `maxMessages` were fetched (then the newer
 * ones are not fetched, and that is logged). A chat that is gone or not accessible (404/403) is
 * logged and gives nothing; other failures are retried per the retry policy, then logged, and
 * what was fetched before is still returned. Never throws.
 */
export async function fetchMissed(
  client: Client,
  cursor: ChatCursor,
  options: FetchMissedOptions,
): Promise<Message[]> {
  const { log, signal } = options;
  const fields = { channelId: cursor.channelId, after: cursor.lastMessageId };
  const retrying = <T>(operation: () => Promise<T>) =>
    withRetry(operation, {
      classify: discordRetryVerdict,
      options: options.retry,
      signal,
      onRetry: (event) =>
        log.warn(
          {
            ...fields,
            attempt: event.attempt,
            delayMs: event.delayMs,
            err: describeError(event.error),
          },
          "discord catch-up fetch failed; retrying",
        ),
    });
  const found: Message[] = [];
  try {
    const channel = await retrying(() => client.channels.fetch(cursor.channelId));
    if (!channel?.isTextBased()) {
      log.warn(fields, "discord catch-up skipped a chat that holds no messages");
      return found;
    }
    let after = cursor.lastMessageId;
    while (found.length < options.maxMessages) {
      const limit = Math.min(PageSize, options.maxMessages - found.length);
      const page = await retrying(() => channel.messages.fetch({ after, limit, cache: false }));
      const ordered = [...page.values()].sort((a, b) => compareSnowflakes(a.id, b.id));
      found.push(...ordered);
      const newest = ordered.at(-1);
      if (newest === undefined || ordered.length < limit) return found;
      after = newest.id;
    }
    const more = await retrying(() => channel.messages.fetch({ after, limit: 1, cache: false }));
    if (more.size > 0) {
      log.warn(
        {
          ...fields,
          fetched: found.length,
          lastFetchedId: after,
          maxMessages: options.maxMessages,
        },
        "discord catch-up stopped at catchUpMaxMessages; later messages of this chat are not answered",
      );
    }
  } catch (error) {
    if (signal.aborted) return found;
    const status = error instanceof DiscordAPIError ? error.status : undefined;
    if (status === 401) options.onUnauthorized();
    if (status === 404 || status === 403) {
      log.warn(
        { ...fields, err: describeError(error) },
        status === 404
          ? "discord catch-up skipped a chat that no longer exists"
          : "discord catch-up skipped a chat the bot cannot read",
      );
    } else {
      log.error(
        { ...fields, fetched: found.length, err: describeError(error) },
        "discord catch-up failed for this chat; messages fetched before the failure are kept",
      );
    }
  }
  return found;
}
