/**
 * Text cutting for tool output and shell replies. Cuts never split a UTF-16 surrogate pair,
 * and every cut says how many characters it dropped, so neither the model nor the person
 * mistakes a truncated output for a complete one.
 */

/** Below this cap a marker would not fit: the text is hard-cut instead. */
const MinMarkedCap = 80;

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}

/** `text.slice(0, end)`, moved left so it does not end inside a surrogate pair. */
export function safeHead(text: string, end: number): string {
  let cut = Math.max(0, Math.min(end, text.length));
  if (cut > 0 && cut < text.length && isHighSurrogate(text.charCodeAt(cut - 1))) cut -= 1;
  return text.slice(0, cut);
}

/** `text.slice(start)`, moved right so it does not start inside a surrogate pair. */
export function safeTail(text: string, start: number): string {
  let cut = Math.max(0, Math.min(start, text.length));
  if (cut > 0 && cut < text.length && isLowSurrogate(text.charCodeAt(cut))) cut += 1;
  return text.slice(cut);
}

/** The marker put where text was dropped. */
export function omittedMarker(omitted: number): string {
  return `[… ${omitted} chars omitted …]`;
}

/**
 * Fits `text` into `maxChars` by keeping its beginning (a third) and its end (two thirds:
 * errors and final results are usually at the end) around an omission marker. The result
 * is never longer than `maxChars`.
 */
export function truncateMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  if (maxChars < MinMarkedCap) return safeHead(text, maxChars);
  const reserve = omittedMarker(text.length).length + 2;
  const budget = maxChars - reserve;
  const head = safeHead(text, Math.floor(budget / 3));
  const tail = safeTail(text, text.length - (budget - head.length));
  const omitted = text.length - head.length - tail.length;
  return `${head}\n${omittedMarker(omitted)}\n${tail}`;
}

/** Result of {@link keepTail}. */
export interface TailCut {
  /** The kept end of the text. */
  readonly text: string;
  /** How many characters were dropped from the start (0 when nothing was cut). */
  readonly omitted: number;
}

/**
 * Keeps the last `maxChars` characters of `text`, starting at a line boundary when one is
 * near (within a fifth of the cap) so the first kept line is whole.
 */
export function keepTail(text: string, maxChars: number): TailCut {
  if (text.length <= maxChars) return { text, omitted: 0 };
  let start = text.length - Math.max(0, maxChars);
  const newline = text.indexOf("\n", start);
  if (newline !== -1 && newline + 1 - start <= maxChars / 5 && newline + 1 < text.length) {
    start = newline + 1;
  }
  const kept = safeTail(text, start);
  return { text: kept, omitted: text.length - kept.length };
}
