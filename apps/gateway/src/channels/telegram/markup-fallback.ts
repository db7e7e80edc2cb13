import type { Logger } from "pino";
import type { RenderedText } from "../../delivery/render/render.js";
import { TelegramDeliveryError } from "./errors.js";

/** Sends one message's text (or caption), with Telegram's `parse_mode` when it has one. */
export type MarkupSend<T> = (text: string, parseMode: "HTML" | undefined) => Promise<T>;

/**
 * Sends `part` with its markup; when Telegram refuses the markup (a 400 "can't parse
 * entities": it sent nothing), sends the same message as its plain text, once
 * (docs/formatting.md). Any other failure, and a failure of the plain send, is the caller's.
 */
export async function sendWithPlainFallback<T>(
  part: RenderedText,
  send: MarkupSend<T>,
  logger: Logger,
): Promise<T> {
  if (part.parseMode === undefined) return send(part.text, undefined);
  try {
    return await send(part.text, part.parseMode);
  } catch (error) {
    if (!(error instanceof TelegramDeliveryError && error.markupRefused)) throw error;
    logger.warn(
      { method: error.method, description: error.facts.description },
      "telegram refused the reply's markup; sending it as plain text",
    );
    return send(part.plain, undefined);
  }
}
