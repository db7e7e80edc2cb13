import { type BacktickRuns, backtickRuns } from "./backtick-runs.js";
import { isBlank, isCjkStop, isHorizontalSpace, isSpace, isWordChar, runLength } from "./chars.js";
import { collapseBlankLines } from "./text.js";

/** One distinct `MEDIA:` path of a reply. */
export interface MediaTag {
  /** The path exactly as written (quotes removed, trailing punctuation trimmed). */
  readonly path: string;
  /** How many times the reply names it; all occurrences are removed or kept together. */
  readonly occurrences: number;
}

/** The tags and directives of a reply, and a way to rebuild its text. */
export interface MediaExtraction {
  /** Distinct tags in order of first appearance. */
  readonly tags: readonly MediaTag[];
  /** `[[audio_as_voice]]` was present. */
  readonly asVoice: boolean;
  /** `[[as_document]]` was present. */
  readonly asDocument: boolean;
  /**
   * The reply text with directives and every tag removed, except tags whose path is in
   * `keepVisible` (those stay verbatim). Line endings are `\n`, runs of blank lines collapse
   * to one, leading blank lines and trailing whitespace are dropped.
   */
  render(keepVisible: ReadonlySet<string>): string;
}

/**
 * Removable spans as growable parallel typed arrays: hundreds of thousands of tags cost a
 * few allocations and no garbage. `ids[i]` indexes `Scanner.paths`; -1 marks a directive,
 * which is always removed.
 */
class Removals {
  count = 0;
  starts = new Int32Array(16);
  ends = new Int32Array(16);
  ids = new Int32Array(16);

  push(start: number, end: number, id: number): void {
    if (this.count === this.starts.length) {
      this.starts = grow(this.starts);
      this.ends = grow(this.ends);
      this.ids = grow(this.ids);
    }
    this.starts[this.count] = start;
    this.ends[this.count] = end;
    this.ids[this.count] = id;
    this.count++;
  }
}

function grow(array: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> {
  const bigger = new Int32Array(array.length * 2);
  bigger.set(array);
  return bigger;
}

const MARKER = "MEDIA:";
const DIRECTIVES = { voice: "[[audio_as_voice]]", document: "[[as_document]]" } as const;
const BACKTICK = 0x60;
const LESS_THAN = 0x3c;
const GREATER_THAN = 0x3e;
const TRAILING = new Set(
  "`\"',.;:)}]!?*\u201d\u2019\u2026\u3001\u3002\uff0c\uff1b\uff1a\uff01\uff1f\uff09\u300d\u300f\u3011\u300b\u3009",
);

/**
 * Find the `MEDIA:` tags and directives of an agent's reply (docs/media.md) with one linear pass.
 *
 * - Ignored, and left in the text: fenced code (``` and ~~~, CommonMark rules: up to three
 *   spaces of indent, an unclosed fence runs to the end), inline code spans (on one line,
 *   matched by backtick-run length) and blockquote lines (`>` after up to three spaces).
 * - `MEDIA:` must not follow a letter, digit or `_`; spaces or tabs may follow the colon.
 * - A path wrapped in backticks, double or single quotes runs to the matching quote on the
 *   same line and may hold spaces. An unclosed quote reads as a bare path after the quote.
 * - A bare path ends at whitespace or CJK/fullwidth punctuation and is trimmed of trailing
 *   `` `"',.;:)}]!?* `` and their CJK/typographic counterparts.
 * - Right after `<` (`<MEDIA:/x.png>`, the autolink form models write), a bare path also ends
 *   at `>`, and a removed tag takes both brackets with it.
 * - `\r\n` and lone `\r` read as `\n`.
 *
 * Every step moves forward through the text or over a precomputed backtick-run table, so the
 * cost is O(length) whatever the input (no regex with backtracking).
 */
export function extractMedia(reply: string): MediaExtraction {
  const text = normalizeNewlines(reply);
  const scan = new Scanner(text);
  scan.run();
  const tags = scan.paths.map((path, id) => ({ path, occurrences: scan.occurrences[id]! }));
  const removals = scan.removals;
  return {
    tags,
    asVoice: scan.asVoice,
    asDocument: scan.asDocument,
    render: (keepVisible) =>
      render(
        text,
        removals,
        tags.map((tag) => keepVisible.has(tag.path)),
      ),
  };
}

/** `\r\n` and lone `\r` become `\n` (split/join: native and linear). */
function normalizeNewlines(reply: string): string {
  if (!reply.includes("\r")) return reply;
  const crlf = reply.split("\r\n").join("\n");
  return crlf.includes("\r") ? crlf.split("\r").join("\n") : crlf;
}

function render(text: string, removals: Removals, kept: readonly boolean[]): string {
  const { starts, ends, ids, count } = removals;
  const parts: string[] = [];
  let cursor = 0;
  for (let i = 0; i < count; i++) {
    const id = ids[i]!;
    if (id >= 0 && kept[id]) continue;
    const start = starts[i]!;
    const end = ends[i]!;
    if (start > cursor) parts.push(text.slice(cursor, start));
    if (end > cursor) cursor = end;
  }
  parts.push(text.slice(cursor));
  return collapseBlankLines(parts.join(""));
}

class Scanner {
  readonly removals = new Removals();
  /** Distinct tag paths in first-seen order, with their occurrence counts. */
  readonly paths: string[] = [];
  readonly occurrences: number[] = [];
  private readonly ids = new Map<string, number>();
  asVoice = false;
  asDocument = false;
  private fence: { char: number; length: number } | undefined;

  constructor(private readonly text: string) {}

  run(): void {
    const { text } = this;
    let pos = 0;
    while (pos <= text.length) {
      let end = text.indexOf("\n", pos);
      if (end === -1) end = text.length;
      if (end > pos) this.line(pos, end);
      pos = end + 1;
    }
  }

  /** Classify one line: fence delimiter, inside a fence, blockquote, or prose. */
  private line(start: number, end: number): void {
    const { text } = this;
    let i = start;
    while (i < end && i - start < 4 && text.charCodeAt(i) === 0x20) i++;
    const indented = i - start > 3;
    const c = text.charCodeAt(i);
    if (this.fence) {
      if (!indented && c === this.fence.char) {
        const run = runLength(text, i, end, c);
        if (run >= this.fence.length && isBlank(text, i + run, end)) this.fence = undefined;
      }
      return;
    }
    if (!indented && (c === BACKTICK || c === 0x7e)) {
      const run = runLength(text, i, end, c);
      const info = text.slice(i + run, end);
      if (run >= 3 && !(c === BACKTICK && info.includes("`"))) {
        this.fence = { char: c, length: run };
        return;
      }
    }
    if (!indented && c === 0x3e) return;
    this.inline(start, end);
  }

  /** Scan prose: skip code spans, record tags and directives. */
  private inline(start: number, end: number): void {
    const { text } = this;
    let runs: BacktickRuns | undefined;
    let r = 0;
    let p = start;
    while (p < end) {
      const c = text.charCodeAt(p);
      if (c === BACKTICK) {
        runs ??= backtickRuns(text, p, end);
        while (r < runs.count && runs.ends[r]! <= p) r++;
        const close = p === runs.starts[r] ? runs.next[r]! : -1;
        if (close === -1) {
          p = runs.ends[r]!;
          r++;
        } else {
          p = runs.ends[close]!;
          r = close + 1;
        }
        continue;
      }
      if (c === 0x4d && text.startsWith(MARKER, p) && !isWordChar(text.charCodeAt(p - 1))) {
        p = this.tag(p, end, start);
        continue;
      }
      if (c === 0x5b) {
        p = this.directive(p, end, start);
        continue;
      }
      p++;
    }
  }

  /** Parse a tag at `at`; returns where scanning resumes. */
  private tag(at: number, end: number, lineStart: number): number {
    const { text } = this;
    const angled = text.charCodeAt(at - 1) === LESS_THAN;
    /** `<` before the tag has its `>` at `stop`: the removed span takes both brackets. */
    const bracketed = (stop: number) => angled && text.charCodeAt(stop) === GREATER_THAN;
    let b = at + MARKER.length;
    while (b < end && isHorizontalSpace(text.charCodeAt(b))) b++;
    const q = text.charCodeAt(b);
    if (q === BACKTICK || q === 0x22 || q === 0x27) {
      const close = text.indexOf(text[b]!, b + 1);
      if (close !== -1 && close < end) {
        const path = text.slice(b + 1, close).trim();
        if (path === "") return at + MARKER.length;
        const to = bracketed(close + 1) ? close + 2 : close + 1;
        this.record(to > close + 1 ? at - 1 : at, to, path, lineStart, end);
        return to;
      }
      b++;
    }
    let stop = b;
    for (; stop < end; stop++) {
      const c = text.charCodeAt(stop);
      if (isSpace(c) || isCjkStop(c) || (angled && c === GREATER_THAN)) break;
    }
    let e = stop;
    while (e > b && TRAILING.has(text[e - 1]!)) e--;
    if (e === b) return at + MARKER.length;
    const last = this.paths.at(-1);
    const repeated = last !== undefined && last.length === e - b && text.startsWith(last, b);
    const to = bracketed(stop) ? stop + 1 : e;
    this.record(to > stop ? at - 1 : at, to, repeated ? last : text.slice(b, e), lineStart, end);
    return to;
  }

  private directive(at: number, end: number, lineStart: number): number {
    const { text } = this;
    let literal: string;
    if (text.startsWith(DIRECTIVES.voice, at)) {
      literal = DIRECTIVES.voice;
      this.asVoice = true;
    } else if (text.startsWith(DIRECTIVES.document, at)) {
      literal = DIRECTIVES.document;
      this.asDocument = true;
    } else {
      return at + 1;
    }
    this.record(at, at + literal.length, undefined, lineStart, end);
    return at + literal.length;
  }

  /**
   * Remember a removable span. When removed, it takes the horizontal whitespace that would
   * otherwise be left doubled: the space before it when it ends a word, the space after it
   * when it starts a line.
   */
  private record(
    start: number,
    end: number,
    path: string | undefined,
    lineStart: number,
    lineEnd: number,
  ): void {
    const { text } = this;
    let id = -1;
    if (path !== undefined && path === this.paths.at(-1)) {
      id = this.paths.length - 1;
      this.occurrences[id]!++;
    } else if (path !== undefined) {
      id = this.ids.get(path) ?? -1;
      if (id === -1) {
        id = this.paths.length;
        this.ids.set(path, id);
        this.paths.push(path);
        this.occurrences.push(0);
      }
      this.occurrences[id]!++;
    }
    let s = start;
    while (s > lineStart && isHorizontalSpace(text.charCodeAt(s - 1))) s--;
    let e = end;
    if (s === lineStart) {
      while (e < lineEnd && isHorizontalSpace(text.charCodeAt(e))) e++;
    } else if (e < lineEnd && isWordChar(text.charCodeAt(e))) {
      s = start;
    }
    this.removals.push(s, e, id);
  }
}
