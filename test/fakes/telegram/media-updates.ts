import type { Chat, Message } from "grammy/types";
import type { FileStore, StoredFile, StoredKind } from "./files.js";
import { entitiesOf, type SenderInput, type UpdateInput, userOf } from "./updates.js";

/** What a user sends as one media message; `bytes` are served by getFile and the download route. */
export interface MediaInput extends SenderInput {
  readonly kind: StoredKind;
  /** The file's bytes (the largest size of a photo). */
  readonly bytes?: Buffer | undefined;
  /** `file_size` announced when it should differ from the bytes (a file too big to make). */
  readonly fileSize?: number | undefined;
  /** `file_name` (documents, audio, video, animation); photos, voice and video notes have none. */
  readonly fileName?: string | undefined;
  readonly mimeType?: string | undefined;
  readonly caption?: string | undefined;
  /** Set on every message of an album. */
  readonly mediaGroupId?: string | undefined;
  /** A group chat (negative id); the default is the sender's private chat. */
  readonly chatId?: number | undefined;
  /** A group's type (negative `chatId` only): `supergroup` (default) or a basic `group`. */
  readonly chatType?: "group" | "supergroup" | undefined;
  /** The smaller sizes of a photo, smallest first (default two made-up thumbnails). */
  readonly thumbnails?: readonly Buffer[] | undefined;
}

/** The files a media message refers to, for tests that check which one was fetched. */
export interface SentMedia {
  /** The file the message is about (a photo's largest size). */
  readonly file: StoredFile;
  /** A photo's smaller sizes. */
  readonly thumbnails: readonly StoredFile[];
}

const Seconds = 3;

function described(file: StoredFile, input: MediaInput): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    file_id: file.fileId,
    file_unique_id: file.fileUniqueId,
    file_size: file.size,
  };
  if (input.fileName !== undefined) fields.file_name = input.fileName;
  if (input.mimeType !== undefined) fields.mime_type = input.mimeType;
  return fields;
}

function mediaFields(
  input: MediaInput,
  files: FileStore,
): { fields: Record<string, unknown>; sent: SentMedia } {
  const file = files.register(input);
  const base = described(file, input);
  switch (input.kind) {
    case "photo": {
      const thumbnails = (
        input.thumbnails ?? [Buffer.from("tiny thumbnail"), Buffer.from("medium thumbnail")]
      ).map((bytes) => files.register({ kind: "photo", bytes }));
      const sizes = [...thumbnails, file].map((stored, i, all) => ({
        file_id: stored.fileId,
        file_unique_id: stored.fileUniqueId,
        file_size: stored.size,
        width: 90 * 2 ** (i + 3 - all.length),
        height: 60 * 2 ** (i + 3 - all.length),
      }));
      return { fields: { photo: sizes }, sent: { file, thumbnails } };
    }
    case "voice":
      return {
        fields: { voice: { mime_type: "audio/ogg", duration: Seconds, ...base } },
        sent: { file, thumbnails: [] },
      };
    case "video_note":
      return {
        fields: { video_note: { length: 240, duration: Seconds, ...base } },
        sent: { file, thumbnails: [] },
      };
    case "audio":
      return { fields: { audio: { duration: Seconds, ...base } }, sent: { file, thumbnails: [] } };
    case "video":
      return {
        fields: { video: { width: 640, height: 360, duration: Seconds, ...base } },
        sent: { file, thumbnails: [] },
      };
    case "animation":
      // Telegram sets `document` too on animations, for clients that predate them.
      return {
        fields: {
          animation: { width: 320, height: 240, duration: Seconds, ...base },
          document: base,
        },
        sent: { file, thumbnails: [] },
      };
    case "document":
      return { fields: { document: base }, sent: { file, thumbnails: [] } };
  }
}

/** A media message update (photo, document, audio, voice, video, video_note, animation). */
export function mediaUpdate(
  messageId: number,
  input: MediaInput,
  files: FileStore,
): { update: UpdateInput; sent: SentMedia } {
  const from = userOf(input);
  const chat: Chat =
    input.chatId === undefined || input.chatId > 0
      ? { id: input.chatId ?? from.id, type: "private", first_name: from.first_name }
      : { id: input.chatId, type: input.chatType ?? "supergroup", title: "Test group" };
  const { fields, sent } = mediaFields(input, files);
  const message = {
    message_id: messageId,
    date: Math.floor(Date.now() / 1000),
    chat,
    from,
    ...fields,
  } as unknown as Message;
  if (input.caption !== undefined) {
    message.caption = input.caption;
    const entities = entitiesOf(input.caption);
    if (entities !== undefined) message.caption_entities = entities;
  }
  if (input.mediaGroupId !== undefined) message.media_group_id = input.mediaGroupId;
  return { update: { message } as UpdateInput, sent };
}
