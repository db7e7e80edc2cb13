import type { Chat, Message } from "grammy/types";
import type { ChatType, InboundMessage } from "../types.js";

/** Telegram chat types as the core keys sessions (docs/sessions.md). */
export function chatTypeOf(chat: Pick<Chat, "type">): ChatType {
  switch (chat.type) {
    case "private":
      return "dm";
    case "channel":
      return "channel";
    default:
      return "group";
  }
}

/** A leading `/command@botname` (Telegram's way of addressing one bot in a group). */
const AddressedCommand = /^(\/[A-Za-z0-9_]+)@([A-Za-z0-9_]+)(?=\s|$)/;

/**
 * The text the core sees for a command: `/stop@mybot now` becomes `/stop now` when addressed
 * to this bot. Returns `undefined` for a command addressed to another bot (not ours to run).
 * Any other text is returned unchanged.
 */
export function stripBotMention(text: string, botUsername: string | undefined): string | undefined {
  const match = AddressedCommand.exec(text);
  if (match === null) return text;
  const [whole, command = "", addressee = ""] = match;
  if (botUsername !== undefined && addressee.toLowerCase() !== botUsername.toLowerCase()) {
    return undefined;
  }
  return command + text.slice(whole.length);
}

function displayName(user: { first_name: string; last_name?: string | undefined }): string {
  return user.last_name === undefined ? user.first_name : `${user.first_name} ${user.last_name}`;
}

/**
 * Maps a Telegram text message (or channel post) to the core's {@link InboundMessage}.
 *
 * - ids are strings; `userId` is the raw numeric id (the core adds the `telegram:` prefix);
 *   a channel post has no sender user, so its `userId` is the channel's own id.
 * - `threadId` is set only for forum topic messages (`is_topic_message`): a plain reply in a
 *   supergroup also carries `message_thread_id`, and must not open a session of its own.
 * - Messages from bots, without text, or commands addressed to another bot give `undefined`.
 */
export function toInboundMessage(
  message: Message,
  context: {
    readonly profile: string;
    readonly botUsername: string | undefined;
    /** The `update_id` the message came in (its receipt id). */
    readonly updateId: number;
  },
): InboundMessage | undefined {
  if (message.text === undefined) return undefined;
  if (message.from?.is_bot === true) return undefined;
  const text = stripBotMention(message.text, context.botUsername);
  if (text === undefined) return undefined;
  const chat = message.chat;
  const sender = message.from;
  const userId = sender?.id ?? message.sender_chat?.id;
  if (userId === undefined) return undefined;
  const chatName = chat.type === "private" ? displayName(chat) : chat.title;
  const userName =
    sender === undefined ? message.sender_chat?.title : (sender.username ?? displayName(sender));
  const threadId =
    message.is_topic_message === true && message.message_thread_id !== undefined
      ? String(message.message_thread_id)
      : undefined;
  return {
    profile: context.profile,
    platform: "telegram",
    chatId: String(chat.id),
    chatType: chatTypeOf(chat),
    chatName,
    threadId,
    userId: String(userId),
    userName,
    messageId: String(message.message_id),
    text,
    receiptId: String(context.updateId),
  };
}
