import { formatBytes } from "@mediagate/media";
import {
  type RenderedText,
  type RenderPlatform,
  type ReplyFormat,
  render,
} from "./render/render.js";
import { type SplitTextOptions, splitText } from "./split-text.js";

/** The name of the file a long reply is attached as (docs/media.md, "Long replies"). */
export const ReplyFileName = "reply.txt";

/** One step of a reply's text: a message, or the whole reply as a file. */
export type ReplyPart =
  | ({ readonly kind: "text" } & RenderedText)
  | {
      readonly kind: "file";
      readonly filename: string;
      readonly mime: "text/plain";
      /** The whole reply text, UTF-8. */
      readonly bytes: Buffer;
    };

/** Options of {@link replyParts}: the platform's split, and how many messages at most. */
export interface ReplyPartsOptions extends SplitTextOptions {
  /**
   * Messages a reply's text may take (`delivery.maxTextChunks`, at least 1). A longer reply
   * is sent as this many messages of its head and the whole of it as {@link ReplyFileName}.
   */
  readonly maxChunks: number;
  /** Where the reply goes and how it is shown (docs/formatting.md); default the text as is. */
  readonly platform?: RenderPlatform | undefined;
  readonly format?: ReplyFormat | undefined;
}

/**
 * Markup makes a reply's source longer than what it shows; a source this many times longer
 * than its messages can hold is surely cut.
 */
const SourceCharsPerShownChar = 4;

/** `text` up to the last line break within `length` (or `length` itself when there is none). */
function headOf(text: string, length: number): string {
  const cut = text.lastIndexOf("\n", length);
  return text.slice(0, cut > 0 ? cut : length);
}

/** The last line of a cut reply's head (it says where the rest is). */
export function cutNotice(bytes: number): string {
  return `✂️ Cut here: the whole reply (${formatBytes(bytes)}) is attached as ${ReplyFileName}.`;
}

/**
 * The steps of a reply's text (docs/media.md, "Long replies"): its messages as {@link render}
 * makes them for the platform and format (split with {@link splitText} for text as is) when
 * there are at most `maxChunks`; otherwise the first `maxChunks` messages — the last one
 * shortened to end with {@link cutNotice} on a line of its own — then the whole text as a
 * `reply.txt` file. So a 1 MB reply is a few messages and one file, not 250 messages.
 * The same text and options always give the same parts: a resumed delivery skips the steps
 * (`text:<n>`, the file being the last `n`) an earlier attempt recorded.
 */
export function replyParts(text: string, options: ReplyPartsOptions): ReplyPart[] {
  const { maxChunks, platform = "console", format = "plain", ...split } = options;
  if (!Number.isInteger(maxChunks) || maxChunks < 1) {
    throw new RangeError(`maxChunks must be a whole number of at least 1, got ${maxChunks}`);
  }
  // Far more than the messages can show is cut for sure: only its head is rendered (parsing
  // a 1 MB reply's Markdown took seconds, measured in docs/formatting.md).
  const sourceBudget = split.maxLength * (maxChunks + 1) * SourceCharsPerShownChar;
  const truncated = text.length > sourceBudget;
  const source = truncated ? headOf(text, sourceBudget) : text;
  if (!truncated) {
    const all = render(platform, text, format, split);
    if (all.length <= maxChunks) return all.map((part) => ({ kind: "text", ...part }));
  }
  const bytes = Buffer.from(text, "utf8");
  const head = render(platform, source, format, {
    ...split,
    maxParts: maxChunks,
    notice: `\n\n${cutNotice(bytes.length)}`,
    truncated,
  });
  return [
    ...head.map((part): ReplyPart => ({ kind: "text", ...part })),
    { kind: "file", filename: ReplyFileName, mime: "text/plain", bytes },
  ];
}
