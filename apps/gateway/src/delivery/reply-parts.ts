import { formatBytes } from "@mediagate/media";
import { type SplitTextOptions, splitText } from "./split-text.js";

/** The name of the file a long reply is attached as (docs/media.md, "Long replies"). */
export const ReplyFileName = "reply.txt";

/** One step of a reply's text: a message, or the whole reply as a file. */
export type ReplyPart =
  | { readonly kind: "text"; readonly text: string }
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
}

/** The last line of a cut reply's head (it says where the rest is). */
export function cutNotice(bytes: number): string {
  return `✂️ Cut here: the whole reply (${formatBytes(bytes)}) is attached as ${ReplyFileName}.`;
}

/**
 * The steps of a reply's text (docs/media.md, "Long replies"): its chunks as {@link splitText}
 * makes them when there are at most `maxChunks`; otherwise the first `maxChunks` chunks — the
 * last one shortened to end with {@link cutNotice} on a line of its own — then the whole text
 * as a `reply.txt` file. So a 1 MB reply is a few messages and one file, not 250 messages.
 * The same text and options always give the same parts: a resumed delivery skips the steps
 * (`text:<n>`, the file being the last `n`) an earlier attempt recorded.
 */
export function replyParts(text: string, options: ReplyPartsOptions): ReplyPart[] {
  const { maxChunks, ...split } = options;
  if (!Number.isInteger(maxChunks) || maxChunks < 1) {
    throw new RangeError(`maxChunks must be a whole number of at least 1, got ${maxChunks}`);
  }
  const chunks = splitText(text, split);
  if (chunks.length <= maxChunks) return chunks.map((chunk) => ({ kind: "text", text: chunk }));
  const bytes = Buffer.from(text, "utf8");
  const notice = `\n\n${cutNotice(bytes.length)}`;
  const measure = split.measure ?? ((s: string) => s.length);
  const head = chunks.slice(0, maxChunks - 1);
  const last = chunks[maxChunks - 1] ?? "";
  // The last head chunk, cut again to leave room for the notice (a fence it opens is closed).
  const room = split.maxLength - measure(notice);
  const lastPiece =
    measure(last) <= room ? last : (splitText(last, { ...split, maxLength: room })[0] ?? "");
  return [
    ...head.map((chunk): ReplyPart => ({ kind: "text", text: chunk })),
    { kind: "text", text: `${lastPiece}${notice}` },
    { kind: "file", filename: ReplyFileName, mime: "text/plain", bytes },
  ];
}
