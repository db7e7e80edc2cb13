import { type REST, Routes } from "discord.js";
import { Defaults } from "../../defaults.js";
import type { ChatTarget } from "../types.js";
import {
  type PreviousReaction,
  ReactionCallError,
  ReactionEmoji,
  type ReactionStatus,
  type StatusReactions,
} from "../types.js";
import type { DiscordConnection } from "./client.js";
import { classifyFailure, describeError } from "./errors.js";
import { CallSignalRest } from "./rest.js";

/**
 * The REST instance of the reactions: no retries, and a rate limit discord.js knows of waits in
 * its queue when it ends within `Defaults.reactions.maxRetryAfterMs` (Discord lets a bot react
 * about once per quarter second in a channel, and a status change is two requests), longer
 * ones are thrown. The delivery's instance throws every one, so it cannot serve here.
 */
export function createReactionRest(connection: DiscordConnection): REST {
  return new CallSignalRest({
    api: connection.apiRoot,
    timeout: connection.requestTimeoutMs,
    retries: 0,
    rejectOnRateLimit: (limit) => limit.timeToReset > Defaults.reactions.maxRetryAfterMs,
  }).setToken(connection.token);
}

const Snowflake = /^\d+$/;
const Statuses = Object.keys(ReactionEmoji) as ReactionStatus[];

/**
 * Status reactions on Discord (docs/sessions.md, "Status reactions"): the new status's emoji
 * is added as the bot's own reaction (`PUT …/reactions/{emoji}/@me`), then the previous one is
 * removed (`DELETE`); after a restart, when the previous one is `unknown`, every other status
 * emoji of the bot is removed. Through {@link createReactionRest}'s instance; one try per
 * request; a failure is a {@link ReactionCallError} (a 429
 * carries Discord's wait). A slash command has no message to react to: nothing is sent.
 */
export class DiscordStatusReactions implements StatusReactions {
  constructor(private readonly rest: REST) {}

  async set(
    target: ChatTarget,
    messageId: string,
    status: ReactionStatus | undefined,
    previous: PreviousReaction,
    signal: AbortSignal,
  ): Promise<void> {
    if (!Snowflake.test(messageId)) return;
    const channel = target.threadId ?? target.chatId;
    const route = (s: ReactionStatus) =>
      Routes.channelMessageOwnReaction(channel, messageId, encodeURIComponent(ReactionEmoji[s]));
    const stale =
      previous === "unknown"
        ? Statuses.filter((s) => s !== status)
        : previous === "none" || previous === status
          ? []
          : [previous];
    await call(async () => {
      if (status !== undefined) await this.rest.put(route(status), { signal });
      for (const old of stale) await this.rest.delete(route(old), { signal });
    });
  }
}

async function call(request: () => Promise<void>): Promise<void> {
  try {
    await request();
  } catch (error) {
    const failure = classifyFailure(error);
    const summary = describeError(error);
    const description =
      typeof summary.message === "string" ? summary.message : String(summary.name ?? "error");
    if (failure?.kind === "rate_limited") {
      throw new ReactionCallError(429, description, failure.retryAfterMs);
    }
    const status =
      failure?.kind === "rejected" || failure?.kind === "server_error" ? failure.status : undefined;
    throw new ReactionCallError(status, description);
  }
}
