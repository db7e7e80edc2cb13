import type { FakeUsage } from "./usage.js";

/** One tool call the fake model makes. `arguments` objects are sent as JSON text. */
export interface FakeToolCall {
  readonly name: string;
  readonly arguments: unknown;
  /** Default `call_<n>`, unique per server. */
  readonly id?: string;
}

/**
 * How an answer is cut into server-sent events when the request asks for `stream: true`. The
 * content goes in chunks of `chunkChars`; each tool call's arguments in three chunks (the id
 * and name with the first), as real endpoints split them; with `stream_options.include_usage`
 * a last chunk with no choices carries the usage.
 */
export interface StreamShape {
  /** Characters of content per chunk (default 16). */
  readonly chunkChars?: number;
  /** Wait after the first content chunk (ms): the model's first token, then a pause. */
  readonly afterFirstMs?: number;
  /** Wait before each later chunk (ms; default none). */
  readonly everyMs?: number;
  /** Stop after this many characters of content and never finish (a stream cut mid-way). */
  readonly hangAfterChars?: number;
  /**
   * Chunks without an `id`, as OpenVINO's model server sends them and Google's compatible
   * layer did in 2025. Default: every chunk carries the answer's id.
   */
  readonly withoutIds?: boolean;
}

/** Answer with a final assistant message. */
export interface TextReply {
  readonly type: "text";
  readonly content: string;
  readonly finishReason?: "stop" | "length";
  readonly delayMs?: number;
  /** The token counts reported; default derived from the request (usage.ts). */
  readonly usage?: FakeUsage;
  readonly stream?: StreamShape;
}

/** Answer with tool calls (and optional text alongside them). */
export interface ToolCallsReply {
  readonly type: "tool_calls";
  readonly calls: readonly FakeToolCall[];
  readonly content?: string | null;
  readonly delayMs?: number;
  /** The token counts reported; default derived from the request (usage.ts). */
  readonly usage?: FakeUsage;
  readonly stream?: StreamShape;
}

/** Answer an OpenAI-style error body with this status (and headers, e.g. retry-after-ms). */
export interface ErrorReply {
  readonly type: "error";
  readonly status: number;
  readonly message: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly delayMs?: number;
}

/** Send this body verbatim (for malformed answers). */
export interface RawReply {
  readonly type: "raw";
  readonly status: number;
  readonly body: string;
  readonly contentType?: string;
  readonly delayMs?: number;
}

/** Never answer; the request stays open until the client gives up or the server closes. */
export interface HangReply {
  readonly type: "hang";
}

/** What the fake answers one chat-completions request with. */
export type FakeReply = TextReply | ToolCallsReply | ErrorReply | RawReply | HangReply;

/** Builders for {@link FakeReply} values. */
export const reply = {
  text: (content: string, extra: Omit<TextReply, "type" | "content"> = {}): TextReply => ({
    type: "text",
    content,
    ...extra,
  }),
  toolCall: (
    name: string,
    args: unknown,
    extra: Omit<ToolCallsReply, "type" | "calls"> = {},
  ): ToolCallsReply => ({ type: "tool_calls", calls: [{ name, arguments: args }], ...extra }),
  toolCalls: (
    calls: readonly FakeToolCall[],
    extra: Omit<ToolCallsReply, "type" | "calls"> = {},
  ): ToolCallsReply => ({ type: "tool_calls", calls, ...extra }),
  error: (
    status: number,
    message = `fake error ${status}`,
    extra: Omit<ErrorReply, "type" | "status" | "message"> = {},
  ): ErrorReply => ({ type: "error", status, message, ...extra }),
  /** A 429 asking the client to retry after `retryAfterMs` (header `retry-after-ms`). */
  rateLimited: (retryAfterMs = 1): ErrorReply => ({
    type: "error",
    status: 429,
    message: "Rate limit reached",
    headers: { "retry-after-ms": String(retryAfterMs) },
  }),
  raw: (status: number, body: string, contentType = "application/json"): RawReply => ({
    type: "raw",
    status,
    body,
    contentType,
  }),
  hang: (): HangReply => ({ type: "hang" }),
} as const;
