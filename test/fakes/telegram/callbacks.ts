import type { User } from "grammy/types";
import { type ApiAnswer, fail, ok } from "./protocol.js";

/** Telegram's limit on `callback_data`, in bytes. */
export const CallbackDataMaxBytes = 64;

/** A button of an inline keyboard as the fake keeps it. */
export interface InlineButton {
  readonly text: string;
  readonly callback_data: string;
}

/** How the bot answered a callback query (`answerCallbackQuery`). */
export interface CallbackAnswer {
  readonly text?: string | undefined;
  readonly showAlert: boolean;
}

/** A callback query the fake sent the bot, and the bot's answer once it came. */
export interface FakeCallbackQuery {
  readonly id: string;
  readonly from: User;
  readonly data: string;
  readonly chatId: string;
  readonly messageId: number;
  answer: CallbackAnswer | undefined;
}

function decodeJson(value: unknown): unknown {
  if (typeof value !== "string") return value;
  try {
    return JSON.parse(value);
  } catch {
    return undefined;
  }
}

/**
 * Reads a `reply_markup` parameter as an inline keyboard, as the Bot API checks it: an array
 * of rows of buttons, each with a non-empty `text` and a `callback_data` of 1–64 bytes (400
 * `BUTTON_DATA_INVALID` otherwise). Absent: `undefined`. Only callback buttons are modelled.
 */
export function inlineKeyboardOf(
  value: unknown,
): { keyboard: InlineButton[][] | undefined } | { error: ApiAnswer } {
  if (value === undefined) return { keyboard: undefined };
  const markup = decodeJson(value);
  const rows =
    typeof markup === "object" && markup !== null
      ? (markup as { inline_keyboard?: unknown }).inline_keyboard
      : undefined;
  if (!Array.isArray(rows))
    return { error: fail(400, "Bad Request: can't parse reply keyboard markup JSON object") };
  const keyboard: InlineButton[][] = [];
  for (const row of rows) {
    if (!Array.isArray(row))
      return { error: fail(400, "Bad Request: can't parse inline keyboard button") };
    const buttons: InlineButton[] = [];
    for (const button of row) {
      const { text, callback_data: data } = (button ?? {}) as Record<string, unknown>;
      if (typeof text !== "string" || text === "")
        return {
          error: fail(400, "Bad Request: text buttons are unallowed in the inline keyboard"),
        };
      if (typeof data !== "string" || data === "" || Buffer.byteLength(data) > CallbackDataMaxBytes)
        return { error: fail(400, "Bad Request: BUTTON_DATA_INVALID") };
      buttons.push({ text, callback_data: data });
    }
    keyboard.push(buttons);
  }
  return { keyboard };
}

/** The keyboard as it appears on a message (`reply_markup`), or nothing for an empty one. */
export function markupField(keyboard: InlineButton[][] | undefined): Record<string, unknown> {
  return keyboard === undefined || keyboard.every((row) => row.length === 0)
    ? {}
    : { reply_markup: { inline_keyboard: keyboard } };
}

/**
 * The callback queries users made, and `answerCallbackQuery`: answered at most once (a second
 * answer, or one for an id never sent, is 400 "query is too old and response timeout expired
 * or query ID is invalid", as Telegram answers both); `text` up to 200 characters.
 */
export class CallbackQueries {
  readonly queries: FakeCallbackQuery[] = [];
  #next = 7_000_000_000_000_000n;

  create(input: Omit<FakeCallbackQuery, "id" | "answer">): FakeCallbackQuery {
    const query: FakeCallbackQuery = { ...input, id: String(this.#next++), answer: undefined };
    this.queries.push(query);
    return query;
  }

  answer(params: Record<string, unknown>): ApiAnswer {
    const query = this.queries.find((q) => q.id === String(params.callback_query_id));
    if (query === undefined || query.answer !== undefined) {
      return fail(
        400,
        "Bad Request: query is too old and response timeout expired or query ID is invalid",
      );
    }
    const text = params.text === undefined ? undefined : String(params.text);
    if (text !== undefined && text.length > 200) return fail(400, "Bad Request: MESSAGE_TOO_LONG");
    query.answer = { text, showAlert: params.show_alert === true || params.show_alert === "true" };
    return ok(true);
  }
}
