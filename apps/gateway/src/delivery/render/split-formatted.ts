import { graphemeBoundary } from "../split-text.js";
import { appendPlain, type FormattedText, sliceFormatted } from "./formatted-text.js";

const MinMaxLength = 16;

/**
 * Splits formatted text into parts of at most `maxLength` UTF-16 units of visible text (what
 * Telegram counts, "after entities parsing"). A part ends at the last newline that fits, else
 * at the last space outside a link or code span (else any space), else hard at the limit,
 * between two graphemes (never inside a surrogate pair, an emoji sequence or a flag); whitespace at a cut is dropped. Entities are clipped to each
 * part, so a style, a link or a code block cut in two is closed at the end of one part and
 * opened again (a code block with its language) at the start of the next.
 */
export function splitFormatted(formatted: FormattedText, maxLength: number): FormattedText[] {
  if (!Number.isInteger(maxLength) || maxLength < MinMaxLength) {
    throw new RangeError(
      `maxLength must be an integer of at least ${MinMaxLength}, got ${maxLength}`,
    );
  }
  const { text } = formatted;
  const parts: FormattedText[] = [];
  let start = skipBlank(text, 0);
  while (start < text.length) {
    if (text.length - start <= maxLength) {
      parts.push(sliceFormatted(formatted, start, trimmedEnd(text, start, text.length)));
      break;
    }
    const { end, next } = cutAt(formatted, start, start + maxLength);
    const pieceEnd = trimmedEnd(text, start, end);
    if (pieceEnd > start) parts.push(sliceFormatted(formatted, start, pieceEnd));
    start = skipBlank(text, next);
  }
  return parts;
}

/** The first part of `formatted` that leaves room for `notice` in `maxLength`, notice added. */
export function headWithNotice(
  formatted: FormattedText,
  maxLength: number,
  notice: string,
): FormattedText {
  const room = Math.max(MinMaxLength, maxLength - notice.length);
  const first = splitFormatted(formatted, room)[0] ?? { text: "", entities: [] };
  return appendPlain(first, notice);
}

function skipBlank(text: string, from: number): number {
  let at = from;
  while (at < text.length && (text[at] === "\n" || text[at] === " ")) at++;
  return at;
}

function trimmedEnd(text: string, start: number, end: number): number {
  let at = end;
  while (at > start && /\s/.test(text[at - 1] as string)) at--;
  return at;
}

function cutAt(
  formatted: FormattedText,
  start: number,
  limit: number,
): { end: number; next: number } {
  const { text } = formatted;
  const window = text.slice(start, limit + 1);
  const newline = window.lastIndexOf("\n");
  if (newline > 0) return { end: start + newline, next: start + newline + 1 };
  const inside = (at: number) =>
    formatted.entities.some(
      (e) =>
        (e.type === "text_link" || e.type === "code") && e.offset < at && at < e.offset + e.length,
    );
  let fallback = -1;
  for (let at = window.lastIndexOf(" "); at > 0; at = window.lastIndexOf(" ", at - 1)) {
    if (!inside(start + at)) return { end: start + at, next: start + at + 1 };
    if (fallback < 0) fallback = at;
  }
  if (fallback > 0) return { end: start + fallback, next: start + fallback + 1 };
  let end = limit;
  const code = text.charCodeAt(end - 1);
  if (code >= 0xd800 && code <= 0xdbff) end -= 1;
  end = graphemeBoundary(text, start, end);
  return { end, next: end };
}
