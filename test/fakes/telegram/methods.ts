import type { User } from "grammy/types";
import { type CallbackQueries, inlineKeyboardOf, markupField } from "./callbacks.js";
import type { CommandMenus } from "./menus.js";
import type { MultipartPart } from "./multipart.js";
import { isRefusal, type ParsedText, parseText } from "./parse-mode.js";
import { type ApiAnswer, fail, ok, type UploadedFile } from "./protocol.js";
import type { ReactionStore } from "./reactions.js";

/** Telegram's limits, enforced so adapter bugs surface as the same 400s the real API gives. */
export const TelegramLimits = {
  messageLength: 4096,
  captionLength: 1024,
  albumMin: 2,
  albumMax: 10,
} as const;

/** Send methods that upload one file, and the parameter that carries it. */
export const FileMethods = {
  sendPhoto: "photo",
  sendAnimation: "animation",
  sendVideo: "video",
  sendAudio: "audio",
  sendVoice: "voice",
  sendDocument: "document",
} as const;
export type FileMethod = keyof typeof FileMethods;

const ChatActions = new Set([
  "typing",
  "upload_photo",
  "record_video",
  "upload_video",
  "record_voice",
  "upload_voice",
  "upload_document",
  "choose_sticker",
  "find_location",
  "record_video_note",
  "upload_video_note",
]);

/**
 * The messages the bot sent, by chat and message id, as the fake keeps them for
 * `editMessageText` and `deleteMessage`.
 */
export interface SentMessages {
  save(chatId: string, message: Record<string, unknown>): void;
  get(chatId: string, messageId: number): Record<string, unknown> | undefined;
  /** Removes it; false when there was none. */
  delete(chatId: string, messageId: number): boolean;
}

/** What a method handler sees: decoded params, file parts by name, and the fake's state. */
export interface MethodContext {
  readonly params: Record<string, unknown>;
  readonly parts: ReadonlyMap<string, MultipartPart>;
  readonly bot: User;
  /** The bot's own messages (those it sent and has not deleted). */
  readonly sent: SentMessages;
  nextMessageId(chatId: string): number;
  chatFor(chatId: string): Record<string, unknown>;
  /** The bot's command menus (`setMyCommands`, `getMyCommands`, `deleteMyCommands`). */
  readonly menus: CommandMenus;
  /** The bot's reactions on messages (`setMessageReaction`). */
  readonly reactions: ReactionStore;
  /** Users' button presses and the bot's `answerCallbackQuery`. */
  readonly callbacks: CallbackQueries;
  /** The error description for a photo the fake is told to reject, if any. */
  photoRejection(file: UploadedFile): string | undefined;
}

export interface MethodResult {
  readonly answer: ApiAnswer;
  readonly files: UploadedFile[];
}

type Resolved = { file: UploadedFile | undefined } | { error: ApiAnswer };

function resolveFile(ctx: MethodContext, field: string, value: unknown): Resolved {
  if (value === undefined || value === null || value === "") {
    return { error: fail(400, `Bad Request: there is no ${field} in the request`) };
  }
  if (typeof value !== "string") return { error: fail(400, `Bad Request: invalid ${field}`) };
  if (!value.startsWith("attach://")) return { file: undefined }; // a file_id or URL
  const attachId = value.slice("attach://".length);
  const part = ctx.parts.get(attachId);
  if (part === undefined) {
    return { error: fail(400, "Bad Request: wrong file identifier/HTTP URL specified") };
  }
  return { file: { field, attachId, filename: part.filename, bytes: part.data } };
}

function fileObject(field: string, file: UploadedFile | undefined, seq: number): unknown {
  const base = {
    file_id: `${field}-${seq}`,
    file_unique_id: `u-${field}-${seq}`,
    file_size: file?.bytes.length ?? 0,
  };
  if (field === "photo") return [{ ...base, width: 800, height: 600 }];
  return file?.filename === undefined ? base : { ...base, file_name: file.filename };
}

function baseMessage(ctx: MethodContext, chatId: string): Record<string, unknown> {
  const message: Record<string, unknown> = {
    message_id: ctx.nextMessageId(chatId),
    date: Math.floor(Date.now() / 1000),
    chat: ctx.chatFor(chatId),
    from: ctx.bot,
  };
  const thread = ctx.params.message_thread_id;
  if (thread !== undefined) {
    message.message_thread_id = Number(thread);
    message.is_topic_message = true;
  }
  return message;
}

/** The caption as Telegram keeps it (its markup parsed), or the 400 it answers. */
function parseCaption(caption: unknown, parseMode: unknown): ParsedText | ApiAnswer | undefined {
  if (caption === undefined) return undefined;
  const parsed = parseText(String(caption), parseMode);
  if (isRefusal(parsed)) return parsed;
  if (parsed.text.length > TelegramLimits.captionLength) {
    return fail(400, "Bad Request: message caption is too long");
  }
  return parsed;
}

function withCaption(message: Record<string, unknown>, caption: ParsedText | undefined): void {
  if (caption === undefined) return;
  message.caption = caption.text;
  if (caption.entities !== undefined) message.caption_entities = caption.entities;
}

function chatIdOf(ctx: MethodContext): string | ApiAnswer {
  const chatId = ctx.params.chat_id;
  if (chatId === undefined || chatId === "") return fail(400, "Bad Request: chat_id is empty");
  return String(chatId);
}

export function sendMessage(ctx: MethodContext): MethodResult {
  const chatId = chatIdOf(ctx);
  if (typeof chatId !== "string") return { answer: chatId, files: [] };
  const parsed = parseText(
    ctx.params.text === undefined ? "" : String(ctx.params.text),
    ctx.params.parse_mode,
  );
  if (isRefusal(parsed)) return { answer: parsed, files: [] };
  const { text } = parsed;
  if (text.trim() === "")
    return { answer: fail(400, "Bad Request: message text is empty"), files: [] };
  if (text.length > TelegramLimits.messageLength) {
    return { answer: fail(400, "Bad Request: message is too long"), files: [] };
  }
  const markup = inlineKeyboardOf(ctx.params.reply_markup);
  if ("error" in markup) return { answer: markup.error, files: [] };
  const message = {
    ...baseMessage(ctx, chatId),
    text,
    ...(parsed.entities === undefined ? {} : { entities: parsed.entities }),
    ...markupField(markup.keyboard),
  };
  ctx.sent.save(chatId, message);
  return { answer: ok(message), files: [] };
}

function messageIdOf(ctx: MethodContext): number | undefined {
  const id = Number(ctx.params.message_id);
  return Number.isSafeInteger(id) && id > 0 ? id : undefined;
}

/**
 * `editMessageText` of a message the bot sent, as the Bot API answers it: the edited message
 * (with `edit_date`); 400 for an unknown or deleted message ("message to edit not found"), a
 * message without text, the same text again ("message is not modified"), an empty or too long
 * text. The same text is compared as Telegram keeps a message's text, leading and trailing
 * whitespace stripped: an edit that only adds a trailing newline is "not modified" too.
 * Inline messages (`inline_message_id`) are not modelled.
 */
export function editMessageText(ctx: MethodContext): MethodResult {
  const plain = (answer: ApiAnswer): MethodResult => ({ answer, files: [] });
  const chatId = chatIdOf(ctx);
  if (typeof chatId !== "string") return plain(chatId);
  const messageId = messageIdOf(ctx);
  if (messageId === undefined) return plain(fail(400, "Bad Request: message_id is empty"));
  const parsed = parseText(
    ctx.params.text === undefined ? "" : String(ctx.params.text),
    ctx.params.parse_mode,
  );
  if (isRefusal(parsed)) return plain(parsed);
  const { text } = parsed;
  if (text.trim() === "") return plain(fail(400, "Bad Request: message text is empty"));
  if (text.length > TelegramLimits.messageLength) {
    return plain(fail(400, "Bad Request: MESSAGE_TOO_LONG"));
  }
  const message = ctx.sent.get(chatId, messageId);
  if (message === undefined) return plain(fail(400, "Bad Request: message to edit not found"));
  if (typeof message.text !== "string") {
    return plain(fail(400, "Bad Request: there is no text in the message to edit"));
  }
  const markup = inlineKeyboardOf(ctx.params.reply_markup);
  if ("error" in markup) return plain(markup.error);
  const newMarkup = markupField(markup.keyboard);
  if (
    message.text.trim() === text.trim() &&
    JSON.stringify(message.reply_markup) === JSON.stringify(newMarkup.reply_markup)
  ) {
    return plain(
      fail(
        400,
        "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
      ),
    );
  }
  // Without reply_markup the edit removes the inline keyboard, as Telegram does.
  const { reply_markup: _old, entities: _previous, ...rest } = message;
  const edited = {
    ...rest,
    text,
    ...(parsed.entities === undefined ? {} : { entities: parsed.entities }),
    ...newMarkup,
    edit_date: Math.floor(Date.now() / 1000),
  };
  ctx.sent.save(chatId, edited);
  return plain(ok(edited));
}

/**
 * `editMessageReplyMarkup` of a message the bot sent: replaces its inline keyboard (absent or
 * empty: removes it); 400 "message to edit not found", or "message is not modified" when the
 * keyboard is the same.
 */
export function editMessageReplyMarkup(ctx: MethodContext): MethodResult {
  const plain = (answer: ApiAnswer): MethodResult => ({ answer, files: [] });
  const chatId = chatIdOf(ctx);
  if (typeof chatId !== "string") return plain(chatId);
  const messageId = messageIdOf(ctx);
  if (messageId === undefined) return plain(fail(400, "Bad Request: message_id is empty"));
  const message = ctx.sent.get(chatId, messageId);
  if (message === undefined) return plain(fail(400, "Bad Request: message to edit not found"));
  const markup = inlineKeyboardOf(ctx.params.reply_markup);
  if ("error" in markup) return plain(markup.error);
  const newMarkup = markupField(markup.keyboard);
  if (JSON.stringify(message.reply_markup) === JSON.stringify(newMarkup.reply_markup)) {
    return plain(
      fail(
        400,
        "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
      ),
    );
  }
  const { reply_markup: _old, ...rest } = message;
  const edited = { ...rest, ...newMarkup, edit_date: Math.floor(Date.now() / 1000) };
  ctx.sent.save(chatId, edited);
  return plain(ok(edited));
}

/**
 * `sendMessageDraft` (Bot API 9.3): a private chat's draft of the bot's next message, shown
 * until a message is sent (ephemeral: nothing is kept but the call). 400 for a group chat
 * (a negative id), a zero or missing `draft_id`, an empty or too long text.
 */
export function sendMessageDraft(ctx: MethodContext): MethodResult {
  const plain = (answer: ApiAnswer): MethodResult => ({ answer, files: [] });
  const chatId = chatIdOf(ctx);
  if (typeof chatId !== "string") return plain(chatId);
  if (chatId.startsWith("-")) return plain(fail(400, "Bad Request: TEXTDRAFT_PEER_INVALID"));
  const draftId = Number(ctx.params.draft_id);
  if (!Number.isSafeInteger(draftId) || draftId === 0) {
    return plain(fail(400, "Bad Request: draft_id must be non-zero"));
  }
  const text = ctx.params.text === undefined ? "" : String(ctx.params.text);
  if (text.trim() === "") return plain(fail(400, "Bad Request: message text is empty"));
  if (text.length > TelegramLimits.messageLength) {
    return plain(fail(400, "Bad Request: message is too long"));
  }
  return plain(ok(true));
}

/** `deleteMessage` of a message the bot sent: `true`, or 400 "message to delete not found". */
export function deleteMessage(ctx: MethodContext): MethodResult {
  const plain = (answer: ApiAnswer): MethodResult => ({ answer, files: [] });
  const chatId = chatIdOf(ctx);
  if (typeof chatId !== "string") return plain(chatId);
  const messageId = messageIdOf(ctx);
  if (messageId === undefined) return plain(fail(400, "Bad Request: message_id is empty"));
  if (!ctx.sent.delete(chatId, messageId)) {
    return plain(fail(400, "Bad Request: message to delete not found"));
  }
  return plain(ok(true));
}

export function sendFile(ctx: MethodContext, method: FileMethod): MethodResult {
  const field = FileMethods[method];
  const chatId = chatIdOf(ctx);
  if (typeof chatId !== "string") return { answer: chatId, files: [] };
  const resolved = resolveFile(ctx, field, ctx.params[field]);
  if ("error" in resolved) return { answer: resolved.error, files: [] };
  const files = resolved.file === undefined ? [] : [resolved.file];
  const caption = parseCaption(ctx.params.caption, ctx.params.parse_mode);
  if (caption !== undefined && isRefusal(caption)) return { answer: caption, files };
  if (field === "photo" && resolved.file !== undefined) {
    const rejection = ctx.photoRejection(resolved.file);
    if (rejection !== undefined) return { answer: fail(400, rejection), files };
  }
  const message = baseMessage(ctx, chatId);
  message[field] = fileObject(field, resolved.file, Number(message.message_id));
  withCaption(message, caption);
  ctx.sent.save(chatId, message);
  return { answer: ok(message), files };
}

export function sendMediaGroup(ctx: MethodContext): MethodResult {
  const chatId = chatIdOf(ctx);
  if (typeof chatId !== "string") return { answer: chatId, files: [] };
  const media = ctx.params.media;
  if (!Array.isArray(media))
    return { answer: fail(400, "Bad Request: media is not an array"), files: [] };
  if (media.length < TelegramLimits.albumMin) {
    return { answer: fail(400, "Bad Request: MEDIA_GROUP_INVALID"), files: [] };
  }
  if (media.length > TelegramLimits.albumMax) {
    return { answer: fail(400, "Bad Request: too many messages to send as an album"), files: [] };
  }
  const files: UploadedFile[] = [];
  const resolvedItems: {
    type: string;
    file: UploadedFile | undefined;
    caption: ParsedText | undefined;
  }[] = [];
  for (const [index, item] of media.entries()) {
    if (typeof item !== "object" || item === null) {
      return { answer: fail(400, "Bad Request: can't parse InputMedia"), files };
    }
    const { type, media: ref, caption: rawCaption, parse_mode } = item as Record<string, unknown>;
    if (type !== "photo" && type !== "video" && type !== "audio" && type !== "document") {
      return { answer: fail(400, "Bad Request: unsupported media type in album"), files };
    }
    const resolved = resolveFile(ctx, `media[${index}]`, ref);
    if ("error" in resolved) return { answer: resolved.error, files };
    if (resolved.file !== undefined) files.push(resolved.file);
    const caption = parseCaption(rawCaption, parse_mode);
    if (caption !== undefined && isRefusal(caption)) return { answer: caption, files };
    resolvedItems.push({ type, file: resolved.file, caption });
  }
  for (const item of resolvedItems) {
    const rejection =
      item.type === "photo" && item.file ? ctx.photoRejection(item.file) : undefined;
    if (rejection !== undefined) return { answer: fail(400, rejection), files };
  }
  const groupId = `group-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const messages = resolvedItems.map((item) => {
    const message = baseMessage(ctx, chatId);
    message.media_group_id = groupId;
    message[item.type] = fileObject(item.type, item.file, Number(message.message_id));
    withCaption(message, item.caption);
    ctx.sent.save(chatId, message);
    return message;
  });
  return { answer: ok(messages), files };
}

export function sendChatAction(ctx: MethodContext): MethodResult {
  const chatId = chatIdOf(ctx);
  if (typeof chatId !== "string") return { answer: chatId, files: [] };
  if (!ChatActions.has(String(ctx.params.action))) {
    return { answer: fail(400, "Bad Request: wrong parameter action in request"), files: [] };
  }
  return { answer: ok(true), files: [] };
}

/** What the fake's state offers to the non-send methods. */
export interface StateHooks {
  dropPendingUpdates(): void;
  pendingUpdates(): number;
}

/** Routes a call (other than getUpdates and the webhook methods) to its handler; unknown methods get 404. */
export function callMethod(method: string, ctx: MethodContext, _state: StateHooks): MethodResult {
  const plain = (answer: ApiAnswer): MethodResult => ({ answer, files: [] });
  switch (method) {
    case "getMe":
      return plain(ok(ctx.bot));
    case "setMyCommands":
    case "getMyCommands":
    case "deleteMyCommands":
      return plain(ctx.menus.call(method, ctx.params));
    case "close":
    case "logOut":
      return plain(ok(true));
    case "getChat":
      return plain(ok(ctx.chatFor(String(ctx.params.chat_id))));
    case "sendMessage":
      return sendMessage(ctx);
    case "sendMediaGroup":
      return sendMediaGroup(ctx);
    case "sendChatAction":
      return sendChatAction(ctx);
    case "editMessageText":
      return editMessageText(ctx);
    case "deleteMessage":
      return deleteMessage(ctx);
    case "setMessageReaction":
      return plain(ctx.reactions.set(ctx.params));
    case "editMessageReplyMarkup":
      return editMessageReplyMarkup(ctx);
    case "answerCallbackQuery":
      return plain(ctx.callbacks.answer(ctx.params));
    case "sendMessageDraft":
      return sendMessageDraft(ctx);
    default:
      if (method in FileMethods) return sendFile(ctx, method as FileMethod);
      return plain(fail(404, "Not Found"));
  }
}
