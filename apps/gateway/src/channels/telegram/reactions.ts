import type { Api } from "grammy";
import type { ReactionTypeEmoji } from "grammy/types";
import type { ChatTarget } from "../types.js";
import {
  type PreviousReaction,
  ReactionCallError,
  ReactionEmoji,
  type ReactionStatus,
  type StatusReactions,
} from "../types.js";
import { failureFacts } from "./errors.js";
import { grammySignal } from "./send-media.js";
import { OutgoingTarget } from "./target.js";

/** The status emojis, typed by grammY as the Bot API's list of reactions a bot may set. */
const Emoji: Record<ReactionStatus, ReactionTypeEmoji["emoji"]> = ReactionEmoji;

/**
 * Status reactions on Telegram (docs/sessions.md, "Status reactions"): `setMessageReaction`
 * with one emoji, which replaces whatever reaction the bot had on the message (an empty list
 * removes it), so the previous one needs no call of its own. One try per call with the
 * caller's signal; a failure is a token-free {@link ReactionCallError} (a 429 carries its
 * `retry_after`).
 */
export class TelegramStatusReactions implements StatusReactions {
  constructor(
    private readonly api: Api,
    private readonly token: string,
  ) {}

  async set(
    target: ChatTarget,
    messageId: string,
    status: ReactionStatus | undefined,
    _previous: PreviousReaction,
    signal: AbortSignal,
  ): Promise<void> {
    const id = Number(messageId);
    if (!Number.isSafeInteger(id) || id <= 0) return;
    const out = new OutgoingTarget(target);
    const reaction: ReactionTypeEmoji[] =
      status === undefined ? [] : [{ type: "emoji", emoji: Emoji[status] }];
    try {
      await this.api.setMessageReaction(out.chat, id, reaction, {}, grammySignal(signal));
    } catch (error) {
      const facts = failureFacts(error, this.token);
      const retryAfterMs = facts.status === 429 ? (facts.retryAfterSeconds ?? 1) * 1000 : undefined;
      throw new ReactionCallError(facts.status, facts.description, retryAfterMs);
    }
  }
}
