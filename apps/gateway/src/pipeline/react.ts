import type { ChannelAdapter, InboundMessage, ReactionStatus } from "../channels/types.js";
import type { ProfileConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import { MessageReaction } from "../turn-progress/reactions.js";
import type { TurnExit } from "./turn-report.js";
import type { MessageContext, Middleware } from "./types.js";

/** What a message needs to get status reactions on its channel. */
export interface ReactionScope {
  readonly channel: ChannelAdapter;
  readonly profile: ProfileConfig;
  readonly message: InboundMessage;
  /** Taken over from the journal: a previous process may have left a reaction on it. */
  readonly recovered: boolean;
  readonly log: Logger;
  /** The gateway's stop: reactions not set by then stay unset. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The message's status reaction, or `undefined` when it gets none: the profile turned them
 * off (`reactions.enabled`), the chat is not private and `reactions.groups` is off, the
 * channel has no reactions (the console), or it is a scheduled run (no message to react on).
 */
export function messageReaction(scope: ReactionScope): MessageReaction | undefined {
  const { channel, profile, message } = scope;
  const settings = profile.reactions;
  const reactions = channel.reactions;
  if (reactions === undefined || !settings.enabled) return undefined;
  if (message.scheduled !== undefined) return undefined;
  if (message.chatType !== "dm" && !settings.groups) return undefined;
  return new MessageReaction(
    reactions,
    { platform: message.platform, chatId: message.chatId, threadId: message.threadId },
    message.messageId,
    {
      previous: scope.recovered ? "unknown" : "none",
      afterMs: settings.afterMs,
      signal: scope.signal,
      onProblem: (error) =>
        scope.log.warn(
          { err: error, messageId: message.messageId },
          "could not set the status reaction; this message's reactions are given up",
        ),
    },
  );
}

/**
 * The reaction a turn leaves by how it ended: `done` when the agent answered (its reply went
 * to the outbox), `failed` when the agent, its sandbox or a step failed, none when /stop or
 * /reset stopped it or its user's pairing was revoked while it waited (`refused`);
 * `undefined` (leave it) when the gateway's stop cut it off: the next start runs it again or
 * tells the chat, and sets the reaction then; so when another replica holds the session
 * (`elsewhere`) and runs it.
 */
export function reactionAfter(exit: TurnExit | undefined): ReactionStatus | null | undefined {
  switch (exit) {
    case "ok":
      return "done";
    case "error":
    case undefined:
      return "failed";
    case "stopped":
    case "refused":
      return null;
    case "cut_off":
    case "elsewhere":
      return undefined;
  }
}

/**
 * Step between `handleCommands` and `enqueueTurn`: a message on its way to a turn gets the
 * `seen` reaction (docs/sessions.md, "Status reactions"), and the reaction its turn's end
 * calls for once the turn is over. A message merged into another's turn (`collect` mode) is
 * set by that turn; one not run (dropped by /stop or /reset, refused by a full queue) loses
 * its reaction; one the gateway's stop left queued keeps `seen` for the next start.
 */
export const reactToMessage: Middleware = async (ctx, next) => {
  const reaction = messageReaction({
    channel: ctx.channel,
    profile: ctx.runtime.profile,
    message: ctx.message,
    recovered: ctx.recovered === true,
    log: ctx.log,
    signal: ctx.services.outbox.signal,
  });
  if (reaction === undefined) return next();
  ctx.reaction = reaction;
  reaction.set("seen");
  let failed = false;
  try {
    await next();
  } catch (error) {
    failed = true;
    throw error;
  } finally {
    settleReactions(ctx, reaction, failed);
  }
};

function settleReactions(ctx: MessageContext, reaction: MessageReaction, threw: boolean): void {
  if (reaction.handedOver) return;
  const all = [reaction, ...(ctx.mergedReactions ?? [])];
  let status: ReactionStatus | null | undefined;
  if (threw) status = "failed";
  else if (ctx.turn !== undefined) status = reactionAfter(ctx.turn.exit);
  else status = ctx.services.queue.stopping ? undefined : null;
  if (status === undefined) return;
  for (const one of all) one.set(status ?? undefined);
}

/** Step after `enqueueTurn`: the turn starts, so its messages show `working`. */
export const showWorking: Middleware = async (ctx, next) => {
  ctx.reaction?.set("working");
  for (const merged of ctx.mergedReactions ?? []) merged.set("working");
  await next();
};
