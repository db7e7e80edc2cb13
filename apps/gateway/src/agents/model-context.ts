import { Defaults } from "../defaults.js";

/**
 * Context sizes of models people run the agent with, by name (the part after a provider
 * prefix such as `openai/`), first match wins. From the providers' model pages; a model not
 * listed gets `Defaults.compaction.fallbackContextTokens` unless the config names its size.
 */
const KnownContextTokens: readonly (readonly [RegExp, number])[] = [
  [/^gpt-5/, 400_000],
  [/^gpt-4\.1/, 1_047_576],
  [/^gpt-4o/, 128_000],
  [/^gpt-4-turbo/, 128_000],
  [/^gpt-4-32k/, 32_768],
  [/^gpt-4(?:-\d{4})?$/, 8_192],
  [/^gpt-3\.5-turbo/, 16_385],
  [/^o[134](?:-|$)/, 200_000],
  [/^claude-/, 200_000],
  [/^gemini-(?:1\.5|2\.0|2\.5)/, 1_048_576],
  [/^mistral-large/, 128_000],
  [/^llama-?3\.[123]/, 128_000],
  [/^qwen2\.5/, 32_768],
];

/**
 * The context size, in tokens, the agent budgets `model` with: `configured` when the config
 * sets one (`agent.contextTokens`), else the model's known size, else
 * `Defaults.compaction.fallbackContextTokens` (small on purpose: compacting early costs a
 * summary call, overflowing costs a failed turn).
 */
export function contextTokensFor(model: string, configured?: number): number {
  if (configured !== undefined) return configured;
  const name = model.slice(model.lastIndexOf("/") + 1).toLowerCase();
  for (const [pattern, tokens] of KnownContextTokens) {
    if (pattern.test(name)) return tokens;
  }
  return Defaults.compaction.fallbackContextTokens;
}
