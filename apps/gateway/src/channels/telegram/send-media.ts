import type { MediaKind, ReadyMedia } from "@mediagate/media";
import { type Api, InputFile } from "grammy";
import type { Logger } from "pino";
import type { RenderedText } from "../../delivery/render/render.js";
import { redactText } from "../../redact.js";
import type { DeliveryOutcome } from "../types.js";
import { TelegramDeliveryError } from "./errors.js";
import { sendWithPlainFallback } from "./markup-fallback.js";
import type { TelegramCaller } from "./sender.js";
import type { OutgoingTarget } from "./target.js";

/** grammY types signals with the `abort-controller` polyfill; a native one works at runtime. */
export type GrammySignal = Parameters<Api["sendMessage"]>[3];
export const grammySignal = (signal: AbortSignal | undefined): GrammySignal =>
  signal as GrammySignal;

/** What a media send needs: the API, the retrying caller and where the reply goes. */
export interface MediaSendContext {
  readonly api: Api;
  readonly caller: TelegramCaller;
  readonly target: OutgoingTarget;
  readonly logger: Logger;
  readonly token: string;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Outcomes of one media message (or album), and what became of the caption it carried:
 * `sent` or `unconfirmed` with the message, `undefined` when it did not go (the text is still
 * to send).
 */
export interface SendResult {
  readonly outcomes: readonly DeliveryOutcome[];
  readonly caption: "sent" | "unconfirmed" | undefined;
  /** Telegram's answer when it said the chat is gone for the bot (`DeliveryReport.unreachable`). */
  readonly unreachable?: string | undefined;
}

/** Whether an outcome ends the reply for now: a long flood wait, or an abort. */
export const haltsDelivery = (outcome: DeliveryOutcome): boolean =>
  outcome.status === "rate_limited" || outcome.status === "pending";

/** The send method for each kind. */
export const SendMethods = {
  photo: "sendPhoto",
  animation: "sendAnimation",
  video: "sendVideo",
  audio: "sendAudio",
  voice: "sendVoice",
  document: "sendDocument",
} as const satisfies Record<MediaKind, string>;

/**
 * A fresh upload of the item: each call reads again from byte 0 of the held descriptor, so a
 * retry sends the whole file again. The chunks are views of a few reused buffers
 * (`OpenedFile.chunks`): grammY hands each straight to the request's socket, which takes
 * the next only once the last was written.
 */
function upload(item: ReadyMedia): InputFile {
  return new InputFile(() => item.file.chunks(), item.filename);
}

function sendAs(
  ctx: MediaSendContext,
  item: ReadyMedia,
  kind: MediaKind,
  caption?: RenderedText,
): Promise<unknown> {
  if (caption === undefined) return sendAsWith(ctx, item, kind, undefined, undefined);
  return sendWithPlainFallback(
    caption,
    (text, parseMode) => sendAsWith(ctx, item, kind, text, parseMode),
    ctx.logger,
  );
}

function sendAsWith(
  ctx: MediaSendContext,
  item: ReadyMedia,
  kind: MediaKind,
  caption: string | undefined,
  parseMode: "HTML" | undefined,
) {
  const { api, target } = ctx;
  const other = {
    ...target.options(),
    ...(caption === undefined ? {} : { caption }),
    ...(parseMode === undefined ? {} : { parse_mode: parseMode }),
  };
  const chat = target.chat;
  const request = (attemptSignal: AbortSignal): Promise<unknown> => {
    const signal = grammySignal(attemptSignal);
    switch (kind) {
      case "photo":
        return api.sendPhoto(chat, upload(item), other, signal);
      case "animation":
        return api.sendAnimation(chat, upload(item), other, signal);
      case "video":
        return api.sendVideo(chat, upload(item), other, signal);
      case "audio":
        return api.sendAudio(chat, upload(item), other, signal);
      case "voice":
        return api.sendVoice(chat, upload(item), other, signal);
      case "document":
        return api.sendDocument(chat, upload(item), other, signal);
    }
  };
  return ctx.caller.call(SendMethods[kind], target.chatId, request, {
    signal: ctx.signal,
    bytes: item.size,
  });
}

function delivered(item: ReadyMedia, kind: MediaKind): DeliveryOutcome {
  return { status: "delivered", path: item.path, kind };
}

/**
 * The typed outcome of a failed upload; the error text is token-free. A long flood wait is
 * `rate_limited`, a send that may have gone through is `unconfirmed`, one the caller aborted
 * before it went is `pending`.
 */
export function failedOutcome(item: ReadyMedia, error: unknown, token: string): DeliveryOutcome {
  if (error instanceof TelegramDeliveryError) {
    if (error.rateLimited) {
      return {
        status: "rate_limited",
        path: item.path,
        retryAfterSeconds: error.retryAfterSeconds ?? 0,
      };
    }
    if (error.unconfirmed) return { status: "unconfirmed", path: item.path };
    if (error.aborted) return { status: "pending", path: item.path };
    return { status: "upload_failed", path: item.path, error: error.message };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { status: "upload_failed", path: item.path, error: redactText(message, [token]) };
}

/**
 * Sends one item by its kind. A photo Telegram refuses as a photo (dimensions, size) is
 * resent as a document — same bytes, same caption.
 */
export async function sendSingle(
  ctx: MediaSendContext,
  item: ReadyMedia,
  caption?: RenderedText,
): Promise<SendResult> {
  const carried = caption === undefined ? undefined : ("sent" as const);
  try {
    await sendAs(ctx, item, item.kind, caption);
    ctx.target.sent();
    return { outcomes: [delivered(item, item.kind)], caption: carried };
  } catch (error) {
    if (item.kind === "photo" && error instanceof TelegramDeliveryError && error.photoRejected) {
      ctx.logger.info(
        { path: item.path, filename: item.filename, description: error.facts.description },
        "telegram refused the photo; resending it as a document",
      );
      try {
        await sendAs(ctx, item, "document", caption);
        ctx.target.sent();
        return { outcomes: [delivered(item, "document")], caption: carried };
      } catch (fallbackError) {
        return failed(ctx, [item], fallbackError, caption);
      }
    }
    return failed(ctx, [item], error, caption);
  }
}

/** Every item failed the same way; an unconfirmed message's caption is unconfirmed too. */
function failed(
  ctx: MediaSendContext,
  items: readonly ReadyMedia[],
  error: unknown,
  caption: RenderedText | undefined,
): SendResult {
  const unconfirmed = error instanceof TelegramDeliveryError && error.unconfirmed;
  const unreachable = error instanceof TelegramDeliveryError && error.chatUnreachable;
  return {
    outcomes: items.map((item) => failedOutcome(item, error, ctx.token)),
    caption: unconfirmed && caption !== undefined ? "unconfirmed" : undefined,
    ...(unreachable ? { unreachable: error.message } : {}),
  };
}

/**
 * Sends 2–10 photos as one album, the caption on the first. When Telegram refuses a photo of
 * the album, each photo is sent on its own (so only the refused ones become documents).
 */
export async function sendAlbum(
  ctx: MediaSendContext,
  items: readonly ReadyMedia[],
  caption?: RenderedText,
): Promise<SendResult> {
  const { api, target, signal } = ctx;
  const send = (text: string | undefined, parseMode: "HTML" | undefined) => {
    const request = (attemptSignal: AbortSignal) =>
      api.sendMediaGroup(
        target.chat,
        items.map((item, i) => ({
          type: "photo" as const,
          media: upload(item),
          ...(i === 0 && text !== undefined ? { caption: text } : {}),
          ...(i === 0 && parseMode !== undefined ? { parse_mode: parseMode } : {}),
        })),
        target.options(),
        grammySignal(attemptSignal),
      );
    const bytes = items.reduce((sum, item) => sum + item.size, 0);
    return ctx.caller.call("sendMediaGroup", target.chatId, request, { signal, bytes });
  };
  try {
    if (caption === undefined) await send(undefined, undefined);
    else await sendWithPlainFallback(caption, send, ctx.logger);
    target.sent();
    return {
      outcomes: items.map((item) => delivered(item, "photo")),
      caption: caption === undefined ? undefined : "sent",
    };
  } catch (error) {
    if (!(error instanceof TelegramDeliveryError && error.photoRejected)) {
      return failed(ctx, items, error, caption);
    }
    ctx.logger.info(
      { photos: items.length, description: error.facts.description },
      "telegram refused an album photo; sending the photos one by one",
    );
    const outcomes: DeliveryOutcome[] = [];
    let carried: SendResult["caption"];
    let unreachable: string | undefined;
    for (const item of items) {
      const halted = outcomes.find(haltsDelivery);
      if (halted !== undefined) {
        outcomes.push({ ...halted, path: item.path });
        continue;
      }
      const result = await sendSingle(ctx, item, carried === undefined ? caption : undefined);
      outcomes.push(...result.outcomes);
      carried ??= result.caption;
      unreachable ??= result.unreachable;
    }
    return { outcomes, caption: carried, ...(unreachable === undefined ? {} : { unreachable }) };
  }
}
