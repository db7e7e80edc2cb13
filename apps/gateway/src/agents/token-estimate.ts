import { countTokens } from "gpt-tokenizer";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { Defaults } from "../defaults.js";

/**
 * Tokens a message costs beyond its text (role and separators), and a request beyond its
 * messages (the reply's priming): OpenAI's published way of counting chat tokens.
 */
const MessageOverheadTokens = 4;
const RequestOverheadTokens = 3;

/**
 * The tokens of one message as the model reads it: its text with the `o200k_base` encoding
 * (gpt-tokenizer), the tool calls' names and arguments, `Defaults.compaction.imageTokens` per
 * image input, and the per-message overhead. An estimate for other tokenizers: the agent
 * scales it by what the server reports (`usage.prompt_tokens`).
 */
export function messageTokens(message: ChatCompletionMessageParam): number {
  let tokens = MessageOverheadTokens;
  const content = message.content;
  if (typeof content === "string") tokens += countTokens(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      if (part.type === "text") tokens += countTokens(part.text);
      else tokens += Defaults.compaction.imageTokens;
    }
  }
  if (message.role === "assistant") {
    for (const call of message.tool_calls ?? []) {
      if (call.type === "function") {
        tokens += countTokens(call.function.name) + countTokens(call.function.arguments);
      }
    }
  }
  return tokens;
}

/** The estimated prompt tokens of a request: its messages and `extraTokens` (tool definitions). */
export function requestTokens(
  messages: readonly ChatCompletionMessageParam[],
  extraTokens = 0,
): number {
  let tokens = RequestOverheadTokens + extraTokens;
  for (const message of messages) tokens += messageTokens(message);
  return tokens;
}

/** The tokens of a plain text (a summary, a tool definition's JSON). */
export function textTokens(text: string): number {
  return countTokens(text);
}
