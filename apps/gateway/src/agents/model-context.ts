/**
 * Context sizes of models people run the agent with, by name (the part after a provider
 * prefix such as `openai/`), first match wins. From the providers' model pages; a model not
 * listed gets `Defaults.models.contextTokens` unless the config names its size
 * (`contextTokensOf`, agents/models.ts).
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
 * The context size, in tokens, of `model` (a model id as the endpoint serves it) when the
 * known list names it; `undefined` otherwise. Ask `contextTokensOf` for an entry's size.
 */
export function knownContextTokens(model: string): number | undefined {
  const name = model.slice(model.lastIndexOf("/") + 1).toLowerCase();
  for (const [pattern, tokens] of KnownContextTokens) {
    if (pattern.test(name)) return tokens;
  }
  return undefined;
}
