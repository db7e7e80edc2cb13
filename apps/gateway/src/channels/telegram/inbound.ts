import type { Chat, Message, MessageEntity } from "grammy/types";
import { isBareGroupCommand } from "../../commands/parse.js";
import type { AttachmentSentAs, ChatType, InboundAttachment, InboundMessage } from "../types.js";

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

/** How messages in groups and supergroups are answered (docs/sessions.md, "Groups"). */
export interface GroupRules {
  /**
   * Answer only messages addressed to the bot: mentioning it, replying to one of its
   * messages, a command with its name (`/cmd@bot`) or one of the gateway's own commands.
   * Otherwise every message of an allowed group is answered.
   */
  readonly requireMention: boolean;
  /** The group chat ids answered (as strings); absent: every group. */
  readonly allowedChats?: ReadonlySet<string> | undefined;
  /**
   * The profile's agent: a bare `/model` or `/usage` is the gateway's under `openai` only
   * (`isBareGroupCommand`). Absent: `shell`.
   */
  readonly agent?: "shell" | "openai" | undefined;
}

/** The bot itself, from getMe. */
export interface BotIdentity {
  readonly id: number | undefined;
  readonly username: string | undefined;
}

/** A `mention` of `@username` or a `text_mention` of the bot's id, in `text`. */
function mentionsOf(
  text: string,
  entities: readonly MessageEntity[] | undefined,
  bot: BotIdentity,
): MessageEntity[] {
  const handle = bot.username === undefined ? undefined : `@${bot.username.toLowerCase()}`;
  return (entities ?? []).filter((entity) => {
    if (entity.type === "text_mention") return bot.id !== undefined && entity.user.id === bot.id;
    if (entity.type !== "mention" || handle === undefined) return false;
    return text.slice(entity.offset, entity.offset + entity.length).toLowerCase() === handle;
  });
}

/**
 * `text` without the given entities, and without the blanks they leave: at the edges, and a
 * doubled one where a mention stood between two words. Offsets are UTF-16 units, as in JS.
 */
function withoutEntities(text: string, entities: readonly MessageEntity[]): string {
  let out = text;
  for (const entity of [...entities].sort((a, b) => b.offset - a.offset)) {
    const before = out.slice(0, entity.offset);
    let after = out.slice(entity.offset + entity.length);
    if (/\s$/.test(before) || before === "") after = after.replace(/^[ \t]+/, "");
    out = before + after;
  }
  return out.trim();
}

/** The message replies to one the bot sent (not to a topic's creation, which every topic message "replies" to). */
function repliesToBot(message: Message, bot: BotIdentity): boolean {
  const replied = message.reply_to_message;
  if (replied === undefined || bot.id === undefined) return false;
  return replied.from?.id === bot.id && replied.forum_topic_created === undefined;
}

/**
 * The text a group message gives the core and whether it is for the bot (docs/sessions.md,
 * "Groups"), or `undefined` for a chat outside `allowedChats`. With `requireMention`, a
 * message is not for the bot when it neither mentions the bot (`@name` or a text mention, in
 * the text or caption), nor replies to one of its messages, nor is a command for it —
 * `/cmd@bot`, or one of the gateway's own commands (`/help`, `/start`, `/status`, `/stop`,
 * `/reset`) sent bare, since Telegram sends bare commands to every bot of a group. The bot's
 * mentions are removed from the text. `written` already had a command's `@bot` suffix removed.
 */
function groupText(
  messages: readonly Message[],
  written: string,
  addressedCommand: boolean,
  bot: BotIdentity,
  rules: GroupRules,
): { text: string; addressed: boolean } | undefined {
  const first = messages[0] as Message;
  if (rules.allowedChats !== undefined && !rules.allowedChats.has(String(first.chat.id))) {
    return undefined;
  }
  const carrier =
    messages.find((m) => m.text !== undefined) ??
    messages.find((m) => m.caption !== undefined && m.caption !== "");
  const raw = carrier?.text ?? carrier?.caption ?? "";
  const mentions = mentionsOf(raw, carrier?.entities ?? carrier?.caption_entities, bot);
  // A command's own `@bot` was already cut from `written`; a mention elsewhere is cut here
  // (offsets refer to the raw text, so only when nothing was cut before).
  const text = mentions.length > 0 && !addressedCommand ? withoutEntities(raw, mentions) : written;
  if (!rules.requireMention) return { text, addressed: true };
  const addressed =
    addressedCommand ||
    mentions.length > 0 ||
    messages.some((m) => repliesToBot(m, bot)) ||
    isBareGroupCommand(text, rules.agent ?? "shell");
  return { text, addressed };
}

function displayName(user: { first_name: string; last_name?: string | undefined }): string {
  return user.last_name === undefined ? user.first_name : `${user.first_name} ${user.last_name}`;
}

/** Extensions for an audio file sent without a name, by the type Telegram announced. */
const AudioExtensions: Readonly<Record<string, string>> = {
  "audio/mpeg": ".mp3",
  "audio/mp4": ".m4a",
  "audio/x-m4a": ".m4a",
  "audio/ogg": ".ogg",
  "audio/flac": ".flac",
  "audio/x-wav": ".wav",
  "audio/wav": ".wav",
};

interface TelegramFile {
  readonly file_id: string;
  readonly file_size?: number | undefined;
  readonly file_name?: string | undefined;
  readonly mime_type?: string | undefined;
}

function attachment(
  sentAs: AttachmentSentAs,
  file: TelegramFile,
  fallbackName: string,
  mime = file.mime_type,
): InboundAttachment {
  return {
    name: file.file_name ?? fallbackName,
    sentAs,
    size: file.file_size,
    mime,
    ref: file.file_id,
  };
}

/**
 * The file a media message carries (docs/inbound-media.md): a photo's largest size, or the
 * document, audio, voice note, video, video note or animation; `undefined` for anything else.
 * A file sent without a name gets one from its kind (`photo.jpg`, `voice.ogg`, `video.mp4`);
 * the inbox sanitizes and numbers names. An animation is taken as such, not as the `document`
 * Telegram sets beside it for old clients.
 */
export function attachmentOf(message: Message): InboundAttachment | undefined {
  if (message.photo !== undefined && message.photo.length > 0) {
    const largest = message.photo.reduce((best, size) =>
      size.width * size.height > best.width * best.height ? size : best,
    );
    // Telegram re-encodes every photo as JPEG.
    return attachment("photo", largest, "photo.jpg", "image/jpeg");
  }
  if (message.animation !== undefined) {
    return attachment("animation", message.animation, "animation.mp4");
  }
  if (message.video !== undefined) return attachment("video", message.video, "video.mp4");
  if (message.video_note !== undefined) {
    return attachment("video_note", message.video_note, "video_note.mp4");
  }
  if (message.voice !== undefined) return attachment("voice", message.voice, "voice.ogg");
  if (message.audio !== undefined) {
    const extension = AudioExtensions[message.audio.mime_type ?? ""] ?? ".mp3";
    return attachment("audio", message.audio, `audio${extension}`);
  }
  if (message.document !== undefined) {
    return attachment("document", message.document, "document");
  }
  return undefined;
}

/**
 * Maps a Telegram message (or channel post) to the core's {@link InboundMessage}: one message,
 * or the messages of one album (one sender's `media_group_id` in one chat: `albumOf`), which
 * become one message with all their files, in order, and the album's caption as its text; the
 * sender is the first message's.
 *
 * - the text is the message's text or caption; a message with files and no caption has text `""`.
 * - ids are strings; `userId` is the raw numeric id (the core adds the `telegram:` prefix);
 *   a channel post has no sender user, so its `userId` is the channel's own id.
 * - `threadId` is set only for forum topic messages (`is_topic_message`): a plain reply in a
 *   supergroup also carries `message_thread_id`, and must not open a session of its own.
 * - Messages from bots, with neither text nor a file, or commands addressed to another bot
 *   give `undefined`; so do group messages that are not for the bot under `groups`
 *   (see {@link GroupRules}), before any file of theirs is fetched or anything is recorded.
 * - `receiptId` is the (first) message's `update_id`; an album lists every update's in
 *   `receiptIds`: the journal records it by each, so an album offered again after a crash is
 *   known by its items (docs/durability.md).
 * - `recorded` names updates of an album recorded before (offered again beside new ones):
 *   whether the album is for the bot is still decided on all of its messages, but only the
 *   others give the message its files, its caption (when theirs), its id and its receipt ids.
 *   Nothing new: `undefined`.
 */
export function toInboundMessage(
  messages: Message | readonly Message[],
  context: {
    readonly profile: string;
    readonly botUsername: string | undefined;
    /** The bot's user id (getMe): replies to its messages and text mentions of it. */
    readonly botId?: number | undefined;
    /** How group and supergroup messages are answered. */
    readonly groups: GroupRules;
    /** The `update_id` each of `messages` came in, in order: their receipt ids. */
    readonly updateIds: readonly number[];
    /** Updates among `updateIds` recorded before: they are left out (see above). */
    readonly recorded?: ReadonlySet<number> | undefined;
    /**
     * The album (`albumOf`) `messages`, one item, belongs to, when it arrived alone (webhook
     * mode): the message carries it, and a group item not for the bot by itself is still
     * given, marked not addressed (the album's caption may be on another item).
     */
    readonly album?: string | undefined;
  },
): InboundMessage | undefined {
  const all: readonly Message[] = Array.isArray(messages) ? messages : [messages as Message];
  if (context.updateIds.length !== all.length) {
    throw new TypeError(`${all.length} messages need as many update ids`);
  }
  const message = all[0];
  if (message === undefined) return undefined;
  if (message.from?.is_bot === true) return undefined;
  const isFresh = (id: number) => context.recorded?.has(id) !== true;
  const freshIds = context.updateIds.filter(isFresh);
  const fresh = all.filter((_, i) => isFresh(context.updateIds[i] as number));
  const first = fresh[0];
  if (first === undefined) return undefined;
  const attachments = fresh.flatMap((m) => attachmentOf(m) ?? []);
  const carrier =
    message.text === undefined
      ? all.find((m) => m.caption !== undefined && m.caption !== "")
      : message;
  const written = carrier?.text ?? carrier?.caption;
  const newText = carrier !== undefined && fresh.includes(carrier);
  if (!newText && attachments.length === 0) return undefined;
  const stripped = stripBotMention(written ?? "", context.botUsername);
  if (stripped === undefined) return undefined;
  const chat = message.chat;
  let text = stripped;
  let addressed = true;
  if (chat.type === "group" || chat.type === "supergroup") {
    const bot = { id: context.botId, username: context.botUsername };
    const addressedCommand = stripped !== (written ?? "");
    const forBot = groupText(all, stripped, addressedCommand, bot, context.groups);
    if (forBot === undefined) return undefined;
    if (!forBot.addressed && context.album === undefined) return undefined;
    addressed = forBot.addressed;
    // A bare mention asks what the bot is.
    text = forBot.text === "" && attachments.length === 0 ? "/help" : forBot.text;
  }
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
    messageId: String(first.message_id),
    text: newText ? text : "",
    sentAtMs: message.date * 1000,
    receiptId: String(freshIds[0]),
    ...(freshIds.length > 1 ? { receiptIds: freshIds.map(String) } : {}),
    ...(attachments.length === 0 ? {} : { attachments }),
    ...(context.album === undefined ? {} : { album: { key: context.album, addressed } }),
  };
}
