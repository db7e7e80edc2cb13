import { parse_html } from "@telegraf/entity";
import { type ApiAnswer, fail } from "./protocol.js";

/** A text or caption as Telegram keeps it once its markup is parsed. */
export interface ParsedText {
  readonly text: string;
  /** Absent when the text has none, as Telegram leaves the field out. */
  readonly entities?: readonly Record<string, unknown>[] | undefined;
}

/**
 * Parses `text` the way the Bot API does for `parse_mode` (`HTML` only: the fake runs
 * `@telegraf/entity`'s port of tdlib's HTML parser, which refuses what Telegram refuses:
 * unclosed, unmatched and unsupported tags, bad entities), and answers the 400 Telegram gives:
 * "Bad Request: can't parse entities: …". Without a parse mode the text is kept as it is.
 * Other parse modes are not modelled: a 400 says so, so a test never passes on an
 * unchecked `MarkdownV2`.
 */
export function parseText(text: string, parseMode: unknown): ParsedText | ApiAnswer {
  if (parseMode === undefined || parseMode === "") return { text };
  if (parseMode !== "HTML") {
    return fail(400, `Bad Request: parse_mode ${String(parseMode)} is not modelled by the fake`);
  }
  try {
    const parsed = parse_html(text);
    return parsed.entities.length === 0
      ? { text: parsed.text }
      : { text: parsed.text, entities: parsed.entities };
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return fail(400, `Bad Request: can't parse entities: ${reason}`);
  }
}

/** Whether `parseText` refused (its answer is the 400 to send). */
export function isRefusal(parsed: ParsedText | ApiAnswer): parsed is ApiAnswer {
  return "status" in parsed;
}
