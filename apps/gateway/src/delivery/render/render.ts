import type { ReplyFormat, TextFormat } from "../../channels/types.js";
import { Defaults } from "../../defaults.js";
import { splitText, utf16Length } from "../split-text.js";
import { markdownForDiscord } from "./discord-markdown.js";
import { appendPlain } from "./formatted-text.js";
import { markdownToEntities } from "./markdown-entities.js";
import { protectMediaLines } from "./media-lines.js";
import { headWithNotice, splitFormatted } from "./split-formatted.js";
import { toTelegramHtml } from "./telegram-html.js";

export type { ReplyFormat, TextFormat };

/** The platforms a reply is rendered for; the console shows text as it is. */
export type RenderPlatform = "telegram" | "discord" | "console";

/** One message's text, ready to send. */
export interface RenderedText {
  /** What is sent: HTML when `parseMode` is set, else the text itself. */
  readonly text: string;
  /** Telegram's parse mode for `text`, when it is markup. */
  readonly parseMode?: "HTML" | undefined;
  /**
   * The same message without markup, what the user would see: sent instead when the
   * platform refuses the markup (Telegram's "can't parse entities"), once.
   */
  readonly plain: string;
}

/** Options of {@link render}. */
export interface RenderOptions {
  /** Longest message, in the platform's units (Telegram: UTF-16 units of visible text). */
  readonly maxLength: number;
  /** Length of a string in the platform's units (default UTF-16 code units). */
  readonly measure?: ((text: string) => number) | undefined;
  /**
   * At most this many messages: past it the last one is shortened to end with `notice` (a
   * line of plain text), and the rest is left out (the caller sends the whole as a file).
   */
  readonly maxParts?: number | undefined;
  readonly notice?: string | undefined;
  /** `text` is the head of a longer reply: `notice` ends the last part whatever the count. */
  readonly truncated?: boolean | undefined;
}

/**
 * Renders a reply's text for `platform` and splits it into messages that each render on
 * their own (docs/formatting.md). Pure: the same input always gives the same parts (the
 * outbox's `text:<n>` steps count them).
 *
 * - Telegram, `markdown`: Telegram HTML from our own entities (every text character
 *   escaped, so nothing the model or a user wrote can become markup), split by visible
 *   length with tags closed and reopened across parts.
 * - Discord, `markdown`: Discord's own Markdown (the text as written, tables flattened, deep
 *   headings bold), split with code fences closed and reopened.
 * - `plain`: the text as written (on Discord its Markdown escaped, so it shows literally).
 * - `verbatim`: the gateway's own words, sent as `sendText` sends them (nothing escaped).
 * - The console: the text as written, in any format.
 *
 * Lines holding a `MEDIA:` marker are never formatted (docs/media.md): a tag the gateway did
 * not deliver shows as the agent wrote it. Text that is not blank never renders to no parts:
 * Markdown that shows nothing on Telegram (`#`, an empty code block) is sent as written.
 */
export function render(
  platform: RenderPlatform,
  text: string,
  format: ReplyFormat,
  options: RenderOptions,
): RenderedText[] {
  if (text.trim() === "") return [];
  if (platform === "telegram" && format === "markdown") return renderTelegram(text, options);
  const source =
    platform !== "discord" || format === "verbatim"
      ? text
      : format === "markdown"
        ? markdownForDiscord(protectMediaLines(text), Defaults.render.tableGridMaxWidth)
        : escapeDiscordMarkdown(text);
  return splitPlain(source, options).map((chunk) => ({ text: chunk, plain: chunk }));
}

function splitPlain(text: string, options: RenderOptions): string[] {
  const split = { maxLength: options.maxLength, measure: options.measure };
  const chunks = splitText(text, split);
  const { maxParts, notice = "" } = options;
  if (maxParts === undefined || (chunks.length <= maxParts && options.truncated !== true)) {
    return chunks;
  }
  const measure = options.measure ?? utf16Length;
  const keep = Math.min(maxParts, chunks.length);
  const last = chunks[keep - 1] ?? "";
  const room = options.maxLength - measure(notice);
  const lastPiece =
    measure(last) <= room ? last : (splitText(last, { ...split, maxLength: room })[0] ?? "");
  return [...chunks.slice(0, keep - 1), `${lastPiece}${notice}`];
}

function renderTelegram(text: string, options: RenderOptions): RenderedText[] {
  const formatted = markdownToEntities(protectMediaLines(text), {
    maxGridWidth: Defaults.render.tableGridMaxWidth,
  });
  // Markdown that shows no text at all (an empty heading, quote or code block, a table of
  // empty cells, a lone link definition) is shown as written: a reply never goes out as nothing.
  let parts =
    formatted.text.trim() === ""
      ? splitFormatted({ text, entities: [] }, options.maxLength)
      : splitFormatted(formatted, options.maxLength);
  const { maxParts, notice = "" } = options;
  if (maxParts !== undefined && (parts.length > maxParts || options.truncated === true)) {
    const keep = Math.min(maxParts, parts.length);
    const last = parts[keep - 1] ?? { text: "", entities: [] };
    const head =
      last.text.length + notice.length <= options.maxLength
        ? appendPlain(last, notice)
        : headWithNotice(last, options.maxLength, notice);
    parts = [...parts.slice(0, Math.max(0, keep - 1)), head];
  }
  return parts.map((part) => ({ text: toTelegramHtml(part), parseMode: "HTML", plain: part.text }));
}

/**
 * Text Discord shows literally: its inline markers (and `\\`) backslash-escaped anywhere, a
 * heading, quote or list marker at a line's start too. Hand-written in one linear pass each:
 * discord.js's `escapeMarkdown` took 50 s on one 24 000-character line (its regexes are
 * quadratic on long lines; measured with node on this machine).
 */
export function escapeDiscordMarkdown(text: string): string {
  return text
    .replace(/[\\*_~`|[\]]/g, "\\$&")
    .replace(/^([ \t]*)([#>-])/gm, "$1\\$2")
    .replace(/^([ \t]*\d+)\./gm, "$1\\.");
}
