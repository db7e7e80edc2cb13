import { createHash } from "node:crypto";
import type { ChatCompletionMessageParam } from "openai/resources/chat/completions";
import { Defaults } from "../defaults.js";
import { tokenizer } from "./tokenizer.js";

/**
 * Tokens a message costs beyond its text (role and separators), and a request beyond its
 * messages (the reply's priming): OpenAI's published way of counting chat tokens.
 */
const MessageOverheadTokens = 4;
const RequestOverheadTokens = 3;

/**
 * Every request of a turn counts the whole conversation again, and it changes little between
 * them: counts are kept by the text's hash (not the text: a cache of long tool outputs would
 * hold megabytes). Texts shorter than `UncachedChars` are cheaper to count than to hash.
 * Measured with `pnpm bench:compaction` at a 128k context: see the commit that added it.
 */
const CachedCounts = 8_192;
const UncachedChars = 256;
const counts = new Map<string, number>();

function count(text: string): number {
  if (text.length < UncachedChars) return tokenizer().countTokens(text);
  const key = createHash("sha1").update(text).digest("base64");
  const known = counts.get(key);
  if (known !== undefined) return known;
  const tokens = tokenizer().countTokens(text);
  if (counts.size >= CachedCounts) counts.delete(counts.keys().next().value!);
  counts.set(key, tokens);
  return tokens;
}

/**
 * The tokens of one message as the model reads it: its text with the `o200k_base` encoding
 * (gpt-tokenizer), the tool calls' names and arguments, `Defaults.compaction.imageTokens` per
 * image input, and the per-message overhead. An estimate for other tokenizers: the agent
 * scales it by what the server reports (`usage.prompt_tokens`).
 */
export function messageTokens(message: ChatCompletionMessageParam): number {
  let tokens = MessageOverheadTokens;
  const content = message.content;
  if (typeof content === "string") tokens += count(content);
  else if (Array.isArray(content)) {
    for (const part of content) {
      if (part.type === "text") tokens += count(part.text);
      else tokens += Defaults.compaction.imageTokens;
    }
  }
  if (message.role === "assistant") {
    for (const call of message.tool_calls ?? []) {
      if (call.type === "function") {
        tokens += tokenizer().countTokens(call.function.name) + count(call.function.arguments);
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
  return count(text);
}
