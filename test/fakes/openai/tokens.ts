import { countTokens as countUncached, decode, encode } from "gpt-tokenizer";
import type { ChatRequestBody, RequestMessage } from "./server.js";

/**
 * Texts counted already, and their counts. A request repeats the whole history and the tool
 * definitions, so without it the fake counted every earlier message again on every request.
 * In `bench:e2e`'s text-only phase (20 messages a user) that was 0.1–0.3 ms of the benchmark's
 * own CPU per message (0.64–0.94 ms before, 0.46–0.65 after, three alternating pairs), a share
 * of the 2-core machine the gateway under test could not have (bench/README.md, issue 31).
 * One for every fake of the process: a count depends on the text alone. Emptied when full.
 */
const counted = new Map<string, number>();
const MaxCounted = 10_000;

function countTokens(text: string): number {
  let tokens = counted.get(text);
  if (tokens === undefined) {
    tokens = countUncached(text);
    if (counted.size >= MaxCounted) counted.clear();
    counted.set(text, tokens);
  }
  return tokens;
}

/** Tokens a message costs beyond its text, and a request beyond its messages (OpenAI's way). */
const MessageOverhead = 4;
const RequestOverhead = 3;
/** What the fake counts per image input. */
const ImageTokens = 1_500;

function messageTokens(message: RequestMessage): number {
  let tokens = MessageOverhead;
  const content = message.content;
  if (typeof content === "string") tokens += countTokens(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      tokens += part.type === "text" ? countTokens(part.text ?? "") : ImageTokens;
    }
  }
  for (const call of message.tool_calls ?? []) {
    tokens += countTokens(call.function.name) + countTokens(call.function.arguments);
  }
  return tokens;
}

/**
 * The prompt tokens of a request as the fake counts them: every message's text (o200k_base),
 * tool calls, the tool definitions' JSON and OpenAI's per-message overhead, times `scale` (a
 * server whose tokenizer counts differently from the client's estimate).
 */
export function promptTokens(body: ChatRequestBody, scale = 1): number {
  let tokens = RequestOverhead;
  for (const message of body.messages) tokens += messageTokens(message);
  if (body.tools !== undefined) tokens += countTokens(JSON.stringify(body.tools));
  return Math.ceil(tokens * scale);
}

/** The tokens of an answer's text. */
export function completionTokens(content: string | null): number {
  return content === null ? 0 : countTokens(content);
}

/** The first `tokens` tokens of `content`, as a server stops writing at its token limit. */
export function firstTokens(content: string, tokens: number): string {
  return decode(encode(content).slice(0, tokens));
}

/** The body OpenAI answers a request longer than the model's context with (HTTP 400). */
export function contextLengthErrorBody(contextTokens: number, tokens: number) {
  return {
    error: {
      message: `This model's maximum context length is ${contextTokens} tokens. However, your messages resulted in ${tokens} tokens. Please reduce the length of the messages.`,
      type: "invalid_request_error",
      param: "messages",
      code: "context_length_exceeded",
    },
  };
}
