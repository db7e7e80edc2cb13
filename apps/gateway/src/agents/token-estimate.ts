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
 * hold megabytes), measured with `pnpm bench:compaction` at a 128k context (see the commit that
 * added it). Texts shorter than `ShortChars` are cheaper to count than to hash, so they are
 * kept by the text itself: a lookup costs 0.06–0.16 µs where counting a short chat line costs
 * 1.2–1.5 µs (gpt-tokenizer 4, Node 20, this machine), and the whole history of short lines
 * was counted again on every turn, a cost growing with the session's length (1.3 % of the
 * gateway's main thread in `bench:e2e --text-only-users 100 --cpu-prof`, 0.5 % with this
 * cache). Each map holds at most `CachedCounts`, the oldest dropped first: at most ~4 MB of
 * short texts.
 */
const CachedCounts = 8_192;
const ShortChars = 256;
const counts = new Map<string, number>();
const shortCounts = new Map<string, number>();

function count(text: string): number {
  const short = text.length < ShortChars;
  const key = short ? text : createHash("sha1").update(text).digest("base64");
  const cache = short ? shortCounts : counts;
  const known = cache.get(key);
  if (known !== undefined) return known;
  const tokens = tokenizer().countTokens(text);
  if (cache.size >= CachedCounts) cache.delete(cache.keys().next().value!);
  cache.set(key, tokens);
  return tokens;
}

/**
 * Counts of frozen messages, by the message: the state store hands out its conversations'
 * messages deep-frozen and the same objects turn after turn (state/conversation-cache.ts), so a
 * request's history is counted by one lookup per message, where finding each long text's count
 * by its hash cost a request of a 128k-token conversation about 2 ms of CPU (`bench:compaction`
 * with `--cpu-prof`; bench/README.md, "a conversation read once"). A frozen message cannot
 * change, so its count cannot go stale, and the map lets go of it with the message.
 */
const frozenCounts = new WeakMap<ChatCompletionMessageParam, number>();

/**
 * The tokens of one message as the model reads it: its text with the `o200k_base` encoding
 * (gpt-tokenizer), the tool calls' names and arguments, `Defaults.compaction.imageTokens` per
 * image input, and the per-message overhead. An estimate for other tokenizers: the agent
 * scales it by what the server reports (`usage.prompt_tokens`).
 */
export function messageTokens(message: ChatCompletionMessageParam): number {
  if (!Object.isFrozen(message)) return countMessage(message);
  const known = frozenCounts.get(message);
  if (known !== undefined) return known;
  const tokens = countMessage(message);
  frozenCounts.set(message, tokens);
  return tokens;
}

function countMessage(message: ChatCompletionMessageParam): number {
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
