import type { ChatMessage, ChatToolCall } from "./types.js";

/**
 * Stored conversation text as strict endpoints accept it (docs/store.md, "Conversation
 * messages"). OpenAI's and Anthropic's parsers refuse a request with half a UTF-16 surrogate
 * pair in a string ("no low surrogate in string"); vLLM and Anthropic's and Google's compatible
 * layers refuse a tool call whose arguments are not a JSON object. One such message in a
 * session's history fails every later request of it, so the agent repairs them as they come
 * (chat-stream.ts, openai-history.ts) and the stores as they load rows written before it did.
 */

const LoneSurrogates = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const LoneSurrogatesEverywhere = new RegExp(LoneSurrogates.source, "g");

/**
 * `text` with each half of a surrogate pair that has no other half replaced by U+FFFD (what
 * `String.prototype.toWellFormed` does, which ES2023 lacks).
 */
export function wellFormed(text: string): string {
  return LoneSurrogates.test(text) ? text.replace(LoneSurrogatesEverywhere, "\uFFFD") : text;
}

/** `text` when it is a JSON object (a tool call's arguments), else `{}`. */
export function objectArguments(text: string): string {
  try {
    const value: unknown = JSON.parse(text);
    if (typeof value === "object" && value !== null && !Array.isArray(value)) return text;
  } catch {
    // Cut off or malformed: replaced below.
  }
  return "{}";
}

function repairedCall(call: ChatToolCall): ChatToolCall {
  const name = wellFormed(call.function.name);
  const args = objectArguments(wellFormed(call.function.arguments));
  return name === call.function.name && args === call.function.arguments
    ? call
    : { ...call, function: { name, arguments: args } };
}

/**
 * A loaded message as strict endpoints accept it: every text well-formed ({@link wellFormed}),
 * every tool call's arguments a JSON object ({@link objectArguments}; the call's tool message
 * already said what was wrong with it). The same object when nothing needed repair.
 */
export function repairedMessage(message: ChatMessage): ChatMessage {
  switch (message.role) {
    case "system":
    case "user":
    case "tool": {
      const content = wellFormed(message.content);
      return content === message.content ? message : { ...message, content };
    }
    case "assistant": {
      const content = message.content === null ? null : wellFormed(message.content);
      const calls = message.tool_calls?.map(repairedCall);
      const same =
        content === message.content &&
        (calls === undefined || calls.every((call, index) => call === message.tool_calls![index]));
      if (same) return message;
      return calls === undefined
        ? { ...message, content }
        : { ...message, content, tool_calls: calls };
    }
  }
}
