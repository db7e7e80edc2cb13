import { Defaults } from "../defaults.js";
import type { ChatMessage } from "../state/types.js";
import { tokenizer } from "./tokenizer.js";
import { safeHead, safeTail } from "./tools-text.js";

/** What a compaction asks the model to summarize. */
export interface SummaryRequest {
  /** The summary the session had, which the new one replaces and must carry on. */
  readonly previous: string | undefined;
  /** The messages to fold in, as {@link renderTranscript} wrote them. */
  readonly transcript: string;
  /** What the person asked the summary to keep (`/compact <focus>`). */
  readonly focus: string | undefined;
  /** The summary's length limit in tokens (told to the model, then enforced). */
  readonly maxTokens: number;
  readonly signal: AbortSignal;
}

/** Asks the model for a summary; rejects when the call fails. */
export type Summarize = (request: SummaryRequest) => Promise<string>;

/** The heading of the summary in the system prompt the model gets. */
export const SummaryHeading =
  "Summary of the earlier conversation (its older messages were compacted into this):";

/**
 * The instructions of a summary request. The request has no tools: a model cannot start work
 * in the sandbox while it summarizes.
 */
export function summaryInstructions(request: SummaryRequest): string {
  const words = Math.max(50, Math.floor(request.maxTokens * 0.7));
  return [
    "Summarize the conversation below for the assistant that continues it: the summary replaces these messages, so the assistant will know only what it keeps.",
    "Keep every fact the user stated (names, numbers, preferences, decisions), what was done in the sandbox (files, commands, results), and open tasks and questions.",
    "Write short notes, oldest first, no preamble; add nothing that is not in the conversation.",
    request.previous === undefined
      ? ""
      : "Fold the summary of the conversation before these messages into yours: keep its facts.",
    request.focus === undefined ? "" : `The user asked this summary to keep: ${request.focus}`,
    `At most ${words} words.`,
  ]
    .filter((line) => line !== "")
    .join("\n");
}

/**
 * The `max_completion_tokens` of a summary request: room for the summary (`maxTokens`) and a
 * reasoning model's thinking, `Defaults.compaction.summaryAnswerFactor` times the limit.
 */
export function summaryAnswerMaxTokens(request: Pick<SummaryRequest, "maxTokens">): number {
  return Math.ceil(request.maxTokens * Defaults.compaction.summaryAnswerFactor);
}

/** The user message of a summary request: the previous summary and the transcript. */
export function summaryInput(request: SummaryRequest): string {
  const previous = request.previous === undefined ? "" : `Summary so far:\n${request.previous}\n\n`;
  return `${previous}Conversation:\n${request.transcript}`;
}

/**
 * The messages as plain text for a summary request, a line per message (`[user] …`,
 * `[tool result] …`), each tool output cut to `toolChars` (its start and end): tool calls and
 * results in the transcript would otherwise make the model want to call tools.
 */
export function renderTranscript(messages: readonly ChatMessage[], toolChars: number): string {
  const lines: string[] = [];
  for (const message of messages) {
    switch (message.role) {
      case "system":
      case "user":
        lines.push(`[${message.role}] ${message.content}`);
        break;
      case "assistant":
        if (message.content !== null && message.content.trim() !== "") {
          lines.push(`[assistant] ${message.content}`);
        }
        for (const call of message.tool_calls ?? []) {
          lines.push(`[assistant calls ${call.function.name}] ${call.function.arguments}`);
        }
        break;
      case "tool":
        lines.push(`[tool result] ${cutMiddle(message.content, toolChars)}`);
        break;
    }
  }
  return lines.join("\n");
}

/**
 * `text` with its middle replaced by a note when it is longer than `maxChars`. The cuts never
 * split a surrogate pair: half of one in a request is invalid JSON to OpenAI's and Anthropic's
 * endpoints, which would refuse every request carrying the trimmed output.
 */
export function cutMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  const keep = Math.max(0, maxChars);
  const headChars = Math.ceil(keep / 2);
  const tailChars = keep - headChars;
  const head = safeHead(text, headChars);
  const tail = tailChars > 0 ? safeTail(text, text.length - tailChars) : "";
  const dropped = text.length - head.length - tail.length;
  return `${head}\n[… ${dropped} chars trimmed to fit the context …]\n${tail}`;
}

/** The model's summary, cut to `maxTokens` (a model may not keep to the length it was told). */
export function clampSummary(text: string, maxTokens: number): string {
  const trimmed = text.trim();
  const { decode, encode } = tokenizer();
  const tokens = encode(trimmed);
  return tokens.length <= maxTokens ? trimmed : decode(tokens.slice(0, maxTokens));
}
