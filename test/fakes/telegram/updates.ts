import type { Chat, Message, Update, User } from "grammy/types";

/** An update before the fake numbers it. */
export type UpdateInput = Omit<Update, "update_id"> & { update_id?: number };

/** Who sends a message; defaults give a plausible human. */
export interface SenderInput {
  /**
   * The message's `date` (Unix seconds): when Telegram says it was sent. Default: the fake's
   * clock (`FakeTelegramOptions.now`); earlier for a message that waited in Telegram's queue.
   */
  readonly date?: number;
  readonly userId?: number;
  readonly firstName?: string;
  readonly lastName?: string;
  readonly username?: string;
}

export interface PrivateTextInput extends SenderInput {
  readonly text: string;
}

export interface GroupTextInput extends SenderInput {
  readonly chatId: number;
  readonly text: string;
  readonly title?: string;
  /** `group` for a basic group; `supergroup` (default) otherwise. */
  readonly chatType?: "group" | "supergroup";
  /**
   * A reply in a plain supergroup carries `message_thread_id` without being a topic message;
   * set this to produce one.
   */
  readonly replyThreadId?: number;
  /** The message this one replies to (e.g. one the bot sent: a recorded call's `result`). */
  readonly replyTo?: Message;
}

export interface TopicTextInput extends SenderInput {
  readonly chatId: number;
  readonly threadId: number;
  readonly text: string;
  readonly title?: string;
}

export interface ChannelPostInput {
  /** As {@link SenderInput.date}. */
  readonly date?: number;
  readonly chatId: number;
  readonly text: string;
  readonly title?: string;
}

export const DefaultSender = {
  userId: 4242,
  firstName: "Ada",
  username: "ada",
} as const satisfies SenderInput;

export function userOf(sender: SenderInput): User {
  const user: User = {
    id: sender.userId ?? DefaultSender.userId,
    is_bot: false,
    first_name: sender.firstName ?? DefaultSender.firstName,
  };
  if (sender.lastName !== undefined) user.last_name = sender.lastName;
  const username =
    sender.username ?? (sender.userId === undefined ? DefaultSender.username : undefined);
  if (username !== undefined) user.username = username;
  return user;
}

/**
 * The entities Telegram adds to a text or caption: `bot_command` for a leading `/command` or
 * `/command@bot` (the `@bot` is part of it), and `mention` for each `@username` (5–32
 * letters, digits and `_`, starting with a letter) that does not follow a word character.
 * Offsets and lengths in UTF-16 units, sorted by offset.
 */
export function entitiesOf(text: string): Message["entities"] {
  const entities: NonNullable<Message["entities"]> = [];
  const command = /^\/[A-Za-z0-9_]+(@[A-Za-z0-9_]+)?/.exec(text);
  if (command !== null)
    entities.push({ type: "bot_command", offset: 0, length: command[0].length });
  const after = command?.[0].length ?? 0;
  for (const match of text.matchAll(
    /(?<![A-Za-z0-9_@/])@[A-Za-z][A-Za-z0-9_]{4,31}(?![A-Za-z0-9_])/g,
  )) {
    if (match.index < after) continue;
    entities.push({ type: "mention", offset: match.index, length: match[0].length });
  }
  return entities.length === 0 ? undefined : entities;
}

function textMessage(
  messageId: number,
  date: number,
  chat: Chat,
  from: User | undefined,
  text: string,
): Message {
  const message = { message_id: messageId, date, chat, text } as Message;
  if (from !== undefined) message.from = from;
  const entities = entitiesOf(text);
  if (entities !== undefined) message.entities = entities;
  return message;
}

const now = (): number => Math.floor(Date.now() / 1000);

export function privateTextUpdate(messageId: number, input: PrivateTextInput): UpdateInput {
  const from = userOf(input);
  const chat: Chat.PrivateChat = { id: from.id, type: "private", first_name: from.first_name };
  if (from.username !== undefined) chat.username = from.username;
  return {
    message: textMessage(messageId, input.date ?? now(), chat, from, input.text),
  } as UpdateInput;
}

export function groupTextUpdate(messageId: number, input: GroupTextInput): UpdateInput {
  const title = input.title ?? "Test group";
  const chat: Chat =
    input.chatType === "group"
      ? { id: input.chatId, type: "group", title }
      : { id: input.chatId, type: "supergroup", title };
  const message = textMessage(messageId, input.date ?? now(), chat, userOf(input), input.text);
  if (input.replyThreadId !== undefined) {
    message.message_thread_id = input.replyThreadId;
  }
  if (input.replyTo !== undefined) {
    message.reply_to_message = input.replyTo as NonNullable<Message["reply_to_message"]>;
  }
  return { message } as UpdateInput;
}

export function topicTextUpdate(messageId: number, input: TopicTextInput): UpdateInput {
  const chat: Chat.SupergroupChat = {
    id: input.chatId,
    type: "supergroup",
    title: input.title ?? "Test forum",
    is_forum: true,
  };
  const message = textMessage(messageId, input.date ?? now(), chat, userOf(input), input.text);
  message.message_thread_id = input.threadId;
  message.is_topic_message = true;
  return { message } as UpdateInput;
}

/** Who upgraded a basic group to a supergroup, and the ids before and after. */
export interface GroupMigrationInput extends SenderInput {
  /** The basic group's id. */
  readonly chatId: number;
  /** The supergroup's id (`-100…`). */
  readonly toChatId: number;
  readonly title?: string;
}

/**
 * A basic group upgraded to a supergroup, as the Bot API tells a bot in both: a service message
 * in the old group with `migrate_to_chat_id`, then one in the supergroup with
 * `migrate_from_chat_id`; neither has text. From then on the group's messages come from the
 * new id.
 */
export function groupMigrationUpdates(
  messageId: number,
  input: GroupMigrationInput,
): [UpdateInput, UpdateInput] {
  const title = input.title ?? "Test group";
  const date = input.date ?? now();
  const from = userOf(input);
  const old: Message = {
    message_id: messageId,
    date,
    chat: { id: input.chatId, type: "group", title },
    from,
    migrate_to_chat_id: input.toChatId,
  } as Message;
  const moved: Message = {
    message_id: 1,
    date,
    chat: { id: input.toChatId, type: "supergroup", title },
    from,
    migrate_from_chat_id: input.chatId,
  } as Message;
  return [{ message: old } as UpdateInput, { message: moved } as UpdateInput];
}

export function channelPostUpdate(messageId: number, input: ChannelPostInput): UpdateInput {
  const chat: Chat.ChannelChat = {
    id: input.chatId,
    type: "channel",
    title: input.title ?? "Test channel",
  };
  const message = textMessage(messageId, input.date ?? now(), chat, undefined, input.text);
  message.sender_chat = chat;
  return { channel_post: message } as UpdateInput;
}
