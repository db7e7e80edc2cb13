/**
 * Splitting long replies into platform-sized messages (docs/media.md): Telegram allows 4096 UTF-16
 * units per message, Discord 2000 characters. Platform-neutral: the limit and the way length
 * is measured are parameters.
 */

/** Options of {@link splitText}. */
export interface SplitTextOptions {
  /** Largest chunk, in `measure` units. At least 16. */
  readonly maxLength: number;
  /**
   * Length of a string in the platform's units. Must be additive (the length of `a + b` is
   * the length of `a` plus that of `b`). Default: UTF-16 code units (`text.length`), which is
   * how Telegram counts.
   */
  readonly measure?: ((text: string) => number) | undefined;
}

/** UTF-16 code units: Telegram's unit for message and caption limits. */
export const utf16Length = (text: string): number => text.length;

/** Unicode code points. */
export const codePointLength = (text: string): number => {
  let count = 0;
  for (const _ of text) count++;
  return count;
};

const MinMaxLength = 16;
/**
 * A line that opens a fenced code block, as CommonMark has it: up to 3 spaces of indent, then
 * 3+ backticks (an info string without backticks may follow) or 3+ tildes (`~~~`, anything may
 * follow). Group 1 is the fence.
 */
const FenceOpenLine = /^ {0,3}(`{3,}(?=[^`]*$)|~{3,})/;
/** A line that may close one: a fence alone (the same character, at least as many). */
const FenceCloseLine = /^ {0,3}(`{3,}|~{3,})[ \t]*$/;

/** A fenced code block open at a cut: its opening line (trimmed) and its fence. */
interface OpenFence {
  readonly line: string;
  readonly fence: string;
}

/**
 * Splits `text` into chunks of at most `maxLength` units each. A chunk ends at the last
 * newline that fits, else at the last space, else hard at the limit; whitespace at the cut
 * (trailing blanks, the separator, blank lines) is dropped, nothing else is. A hard cut falls
 * between two graphemes (never inside a surrogate pair, an emoji sequence, a flag or an
 * accented letter), except in one grapheme longer than a chunk. A chunk that ends inside a
 * fenced code block (``` or `~~~`, told apart as CommonMark does: a block ends only at a fence
 * of its own character at least as long) is closed with its fence, and the next chunk reopens
 * it with the same opening line (language kept), so every chunk renders on its own. Whitespace-only chunks are
 * dropped (platforms refuse empty messages); empty text gives no chunks.
 */
export function splitText(text: string, options: SplitTextOptions): string[] {
  const { maxLength } = options;
  const measure = options.measure ?? utf16Length;
  if (!Number.isInteger(maxLength) || maxLength < MinMaxLength) {
    throw new RangeError(
      `maxLength must be an integer of at least ${MinMaxLength}, got ${maxLength}`,
    );
  }
  // A fence longer than this could not be closed and reopened within a chunk: not carried.
  const maxFence = Math.floor(maxLength / 4);
  const chunks: string[] = [];
  let position = 0;
  let openFence: OpenFence | undefined;
  while (position < text.length) {
    const reopen = openFence === undefined ? "" : `${reopenLine(openFence, maxLength, measure)}\n`;
    const budget = maxLength - measure(reopen);
    const end = fit(text, position, budget, measure);
    if (end === text.length) {
      chunks.push(reopen + text.slice(position));
      break;
    }
    let cut = chooseCut(text, position, end);
    let piece = text.slice(position, cut.pieceEnd);
    let fenceAfter = fenceStateAfter(piece, openFence, maxFence);
    if (fenceAfter !== undefined) {
      // Room for the longest closing a fence that fits here can take.
      const closingRoom = measure(`\n${fenceAfter.fence[0]!.repeat(maxFence)}`);
      cut = chooseCut(text, position, fit(text, position, budget - closingRoom, measure));
      piece = text.slice(position, cut.pieceEnd);
      fenceAfter = fenceStateAfter(piece, openFence, maxFence);
    }
    const closing = fenceAfter === undefined ? "" : `\n${fenceAfter.fence}`;
    chunks.push(reopen + piece.trimEnd() + closing);
    position = cut.nextStart;
    // Blank lines at a cut would only pad the next message.
    while (text[position] === "\n") position++;
    openFence = fenceAfter;
  }
  return chunks.filter((chunk) => chunk.trim() !== "");
}

/**
 * The end index of the longest run from `start` measuring at most `budget`, on a code point
 * boundary. Always advances by at least one code point so splitting terminates.
 */
function fit(text: string, start: number, budget: number, measure: (s: string) => number): number {
  if (measure === utf16Length) {
    let end = Math.min(text.length, start + Math.max(budget, 1));
    if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) {
      if (isLowSurrogate(text.charCodeAt(end))) end = end - 1 > start ? end - 1 : end + 1;
    }
    return end;
  }
  let used = 0;
  let end = start;
  while (end < text.length) {
    const step = codePointWidth(text, end);
    const cost = measure(text.slice(end, end + step));
    if (used + cost > budget && end > start) break;
    used += cost;
    end += step;
  }
  return end;
}

/** Where to cut within `[start, end)`: after the last newline, else the last space, else `end`. */
function chooseCut(
  text: string,
  start: number,
  end: number,
): { pieceEnd: number; nextStart: number } {
  if (end >= text.length) return { pieceEnd: text.length, nextStart: text.length };
  const window = text.slice(start, end);
  // A separator right at the cut point also counts: the chunk then ends just before it.
  const separatorAtEnd = text[end] === "\n" || text[end] === " " ? text[end] : undefined;
  const newline = separatorAtEnd === "\n" ? window.length : window.lastIndexOf("\n");
  if (newline > 0) return { pieceEnd: start + newline, nextStart: start + newline + 1 };
  const space = separatorAtEnd === " " ? window.length : window.lastIndexOf(" ");
  if (space > 0) return { pieceEnd: start + space, nextStart: start + space + 1 };
  const cut = graphemeBoundary(text, start, end);
  return { pieceEnd: cut, nextStart: cut };
}

const Graphemes = new Intl.Segmenter(undefined, { granularity: "grapheme" });
/** How much text around a hard cut is read to tell the grapheme the cut falls in. */
const GraphemeWindow = 64;

/**
 * The last grapheme boundary in `(start, end]` (`end` itself when it is one): a hard cut there
 * splits no emoji sequence, flag or accented letter between two messages. `end` when one
 * grapheme fills the whole range (splitting must go on; `end` is on a code point already).
 * Reads a few dozen characters around the cut (a run of flags from `start`: their pairs count
 * from its beginning); between two ASCII characters there is always a boundary.
 */
export function graphemeBoundary(text: string, start: number, end: number): number {
  if (end >= text.length || end <= start) return end;
  if (text.charCodeAt(end - 1) < 0x80 && text.charCodeAt(end) < 0x80) return end;
  let from = Math.max(start, end - GraphemeWindow);
  if (isLowSurrogate(text.charCodeAt(from))) from -= 1;
  if (from > start && isRegionalIndicator(text.codePointAt(from - 2))) from = start;
  const window = text.slice(from, Math.min(text.length, end + GraphemeWindow));
  let last = 0;
  for (const { index } of Graphemes.segment(window)) {
    if (index > end - from) break;
    last = index;
  }
  return last > 0 ? from + last : end;
}

const isRegionalIndicator = (code: number | undefined): boolean =>
  code !== undefined && code >= 0x1f1e6 && code <= 0x1f1ff;

/**
 * The fenced block still open after `piece`, given the one open before it. A block closes at
 * a fence line of its own character at least as long as its fence (a ``` line inside a `~~~`
 * or a ```` block is code); a fence longer than `maxFence` is not carried.
 */
function fenceStateAfter(
  piece: string,
  open: OpenFence | undefined,
  maxFence: number,
): OpenFence | undefined {
  let state = open;
  for (const line of piece.split("\n")) {
    if (state === undefined) {
      const fence = FenceOpenLine.exec(line)?.[1];
      if (fence !== undefined && fence.length <= maxFence) state = { line: line.trim(), fence };
      continue;
    }
    const close = FenceCloseLine.exec(line)?.[1];
    if (close !== undefined && close[0] === state.fence[0] && close.length >= state.fence.length) {
      state = undefined;
    }
  }
  return state;
}

/** The line that reopens a fence in the next chunk; the bare fence if the original is long. */
function reopenLine(open: OpenFence, maxLength: number, measure: (s: string) => number): string {
  return measure(open.line) <= Math.floor(maxLength / 4) ? open.line : open.fence;
}

function codePointWidth(text: string, index: number): number {
  return isHighSurrogate(text.charCodeAt(index)) && isLowSurrogate(text.charCodeAt(index + 1))
    ? 2
    : 1;
}

const isHighSurrogate = (code: number): boolean => code >= 0xd800 && code <= 0xdbff;
const isLowSurrogate = (code: number): boolean => code >= 0xdc00 && code <= 0xdfff;
