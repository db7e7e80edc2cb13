import { type ApiAnswer, fail, ok } from "./protocol.js";

const ZWJ = "\u200d";

/**
 * The emojis a bot may react with (`ReactionTypeEmoji.emoji` of the Bot API, as of Bot API
 * 9.x): any other one is refused with 400 `REACTION_INVALID`, as Telegram does.
 */
export const AllowedReactionEmoji: ReadonlySet<string> = new Set([
  ..."👍 👎 ❤ 🔥 🥰 👏 😁 🤔 🤯 😱 🤬 😢 🎉 🤩 🤮 💩 🙏 👌 🕊 🤡 🥱 🥴 😍 🐳".split(" "),
  `❤${ZWJ}🔥`,
  ..."🌚 🌭 💯 🤣 ⚡ 🍌 🏆 💔 🤨 😐 🍓 🍾 💋 🖕 😈 😴 😭 🤓 👻".split(" "),
  `👨${ZWJ}💻`,
  ..."👀 🎃 🙈 😇 😨 🤝 ✍ 🤗 🫡 🎅 🎄 ☃ 💅 🤪 🗿 🆒 💘 🙉 🦄 😘 💊 🙊 😎 👾".split(" "),
  `🤷${ZWJ}♂`,
  "🤷",
  `🤷${ZWJ}♀`,
  "😡",
]);

/** One `setMessageReaction` the fake accepted: the bot's reactions on the message after it. */
export interface ReactionChange {
  readonly chatId: string;
  readonly messageId: number;
  /** The emojis now shown by the bot (empty: its reaction was removed). */
  readonly emojis: readonly string[];
}

/** The bot's reactions as `setMessageReaction` left them, with every accepted change in order. */
export class ReactionStore {
  readonly changes: ReactionChange[] = [];
  readonly #current = new Map<string, readonly string[]>();

  /** What the bot shows on the message now. */
  on(chatId: string, messageId: number): readonly string[] {
    return this.#current.get(`${chatId}:${messageId}`) ?? [];
  }

  /**
   * `setMessageReaction` as the Bot API answers a bot: `reaction` is a list of
   * `ReactionTypeEmoji` (an empty or absent list removes the bot's reaction); a bot may set
   * one reaction, from the allowed list; the new list replaces the bot's previous reaction.
   */
  set(params: Record<string, unknown>): ApiAnswer {
    const chatId = params.chat_id;
    if (chatId === undefined || chatId === "") return fail(400, "Bad Request: chat_id is empty");
    const messageId = Number(params.message_id);
    if (!Number.isSafeInteger(messageId) || messageId <= 0) {
      return fail(400, "Bad Request: message_id is empty");
    }
    const reaction = params.reaction ?? [];
    if (!Array.isArray(reaction)) return fail(400, "Bad Request: can't parse reaction types");
    if (reaction.length > 1) return fail(400, "Bad Request: REACTIONS_TOO_MANY");
    const emojis: string[] = [];
    for (const item of reaction) {
      const { type, emoji } = (item ?? {}) as Record<string, unknown>;
      if (type !== "emoji" || typeof emoji !== "string" || !AllowedReactionEmoji.has(emoji)) {
        return fail(400, "Bad Request: REACTION_INVALID");
      }
      emojis.push(emoji);
    }
    const change = { chatId: String(chatId), messageId, emojis };
    this.#current.set(`${change.chatId}:${messageId}`, emojis);
    this.changes.push(change);
    return ok(true);
  }
}
