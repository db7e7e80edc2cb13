import { type Message, MessageReferenceType, MessageType } from "discord.js";
import { isBareGroupCommand } from "../../commands/parse.js";
import type { InboundMessage } from "../types.js";
import { inboundAttachmentsOf } from "./attachments.js";

/** What the mapping needs besides the message. */
export interface InboundRules {
  readonly profile: string;
  readonly botUserId: string;
  /** Guild channels (or threads) where every message is answered, mention or not. */
  readonly channelIds: ReadonlySet<string>;
  /** Threads the bot has posted in during this process: it keeps answering there. */
  /** Threads the bot answered in (the most recent `Defaults.discord.answeredThreadsKept`). */
  readonly answeredThreads: Pick<ReadonlySet<string>, "has">;
  /**
   * `discord.allowedChannels`: the guild channels the bot answers in at all (their threads
   * too, and the `channelIds` besides); absent: every channel. DMs are not affected.
   */
  readonly allowedChannelIds?: ReadonlySet<string> | undefined;
  /**
   * The profile's agent: a bare `/model` or `/usage` is the gateway's under `openai` only
   * (`isBareGroupCommand`). Absent: `shell`.
   */
  readonly agent?: "shell" | "openai" | undefined;
}

/**
 * Whether the bot answers in this guild channel, or in a thread of it (`parentId`), at all
 * (`discord.allowedChannels`, docs/sessions.md "Groups"); messages and slash commands alike.
 */
export function channelAllowed(
  rules: Pick<InboundRules, "channelIds" | "allowedChannelIds">,
  channelId: string,
  parentId?: string | null,
): boolean {
  const allowed = rules.allowedChannelIds;
  if (allowed === undefined) return true;
  return [channelId, parentId].some(
    (id) => id != null && (allowed.has(id) || rules.channelIds.has(id)),
  );
}

/**
 * Removes `<@id>` / `<@!id>` mentions of the bot (and `<@&id>` of each of `roleIds`, its own
 * roles) and the whitespace they leave at the edges.
 */
export function stripMention(
  text: string,
  botUserId: string,
  roleIds: readonly string[] = [],
): string {
  const mentions = [`<@!${botUserId}>`, `<@${botUserId}>`, ...roleIds.map((id) => `<@&${id}>`)];
  return mentions.reduce((rest, mention) => rest.split(mention).join(""), text).trim();
}

/**
 * The roles mentioned in a guild message that are the bot's own: the managed role Discord
 * gives a bot in each server (tagged with its id), which Discord clients offer beside the bot's
 * user when one types `@` and its name. Mentioning it addresses the bot.
 */
function botRolesMentioned(message: Message, botUserId: string): string[] {
  if (!message.inGuild()) return [];
  return [...message.mentions.roles.values()]
    .filter((role) => role.tags?.botId === botUserId)
    .map((role) => role.id);
}

/**
 * What a forward (Discord's "Forward" of another message) carries: the forwarded message's
 * snapshot, whose text and files are the forward's (its own content is empty). Taken as the
 * sender's message, as a forward on Telegram is; `undefined` for any other message.
 */
function forwardedOf(message: Message): SaidIn | undefined {
  if (message.reference?.type !== MessageReferenceType.Forward) return undefined;
  const snapshot = message.messageSnapshots.first();
  if (snapshot === undefined) return undefined;
  return {
    content: snapshot.content ?? "",
    attachments: snapshot.attachments,
    flags: snapshot.flags,
  };
}

/** Where a message's words and files are: itself, or the message it forwards. */
type SaidIn = Pick<Message, "content" | "attachments" | "flags">;

/**
 * Maps a discord.js message to what the core sees, or `undefined` when the bot should not
 * answer it (docs/sessions.md keys follow from chatType/chatId/threadId):
 *
 * - DM → `dm`, chatId = the DM channel id. Always answered.
 * - With `allowedChannelIds`, a guild channel outside it (and `channelIds`), or a thread whose
 *   own id and parent are both outside, is never answered (see {@link channelAllowed}).
 * - Guild text channel → `group`, chatId = the channel id. Answered when addressed (the bot is
 *   mentioned, the message replies to one of the bot's, or it is one of the gateway's own
 *   commands typed bare, `/approve` excepted) or the channel is configured.
 * - Thread → `group`, chatId = the parent channel id, threadId = the thread id (a thread is its
 *   own session). Answered when addressed, the thread or its parent is configured,
 *   the bot is a member of the thread, or it already answered there — so a conversation started
 *   with a mention continues without one.
 *
 * Messages of bots (itself included), webhooks and system messages are ignored; the bot's
 * mention is stripped from the text; a message that is only the mention becomes `/help`. Every
 * attachment becomes an `InboundAttachment` (docs/inbound-media.md), all of one message in one
 * turn; a message with attachments and no text is answered like any other, one with neither
 * (nor a mention) is ignored.
 */
export function toInboundMessage(
  message: Message,
  rules: InboundRules,
): InboundMessage | undefined {
  if (message.author.bot || message.author.id === rules.botUserId || message.webhookId) {
    return undefined;
  }
  if (message.type !== MessageType.Default && message.type !== MessageType.Reply) return undefined;
  const botRoles = botRolesMentioned(message, rules.botUserId);
  const said: SaidIn = forwardedOf(message) ?? message;
  const stripped = stripMention(said.content, rules.botUserId, botRoles);
  const attachments = inboundAttachmentsOf(said);
  if (stripped === "" && attachments.length === 0 && said.content.trim() === "") {
    return undefined;
  }
  // A message that is only the bot's mention asks what the bot is, as on Telegram.
  const text = stripped === "" && attachments.length === 0 ? "/help" : stripped;
  // Addressed: mentioned (its user or its own role), a reply to one of the bot's messages (ping
  // or not), or one of the gateway's own commands typed bare (`/help`, `/status`, …: a Discord
  // client sends the text when no slash command matches), as on Telegram (docs/sessions.md,
  // "Groups").
  const addressed =
    message.mentions.users.has(rules.botUserId) ||
    botRoles.length > 0 ||
    message.mentions.repliedUser?.id === rules.botUserId ||
    isBareGroupCommand(text, rules.agent ?? "shell");
  const base = {
    profile: rules.profile,
    platform: "discord" as const,
    userId: message.author.id,
    userName: message.author.globalName ?? message.author.username,
    messageId: message.id,
    text,
    sentAtMs: message.createdTimestamp,
    receiptId: message.id,
    ...(attachments.length === 0 ? {} : { attachments }),
  };
  const { channel } = message;
  if (!message.inGuild()) {
    return { ...base, chatType: "dm", chatId: message.channelId, chatName: base.userName };
  }
  if (!channelAllowed(rules, channel.id, channel.isThread() ? channel.parentId : undefined)) {
    return undefined;
  }
  if (channel.isThread()) {
    const parentId = channel.parentId ?? channel.id;
    const answers =
      addressed ||
      rules.channelIds.has(channel.id) ||
      rules.channelIds.has(parentId) ||
      rules.answeredThreads.has(channel.id) ||
      channel.joined;
    if (!answers) return undefined;
    return {
      ...base,
      chatType: "group",
      chatId: parentId,
      threadId: channel.id,
      chatName: channel.name,
    };
  }
  if (!addressed && !rules.channelIds.has(channel.id)) return undefined;
  const chatName = "name" in channel ? `#${channel.name}` : undefined;
  return { ...base, chatType: "group", chatId: channel.id, chatName };
}
