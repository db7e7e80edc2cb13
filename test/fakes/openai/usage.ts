import type { ChatRequestBody } from "./server.js";

/** Token counts a reply reports (`usage`), scripted or derived from the request. */
export interface FakeUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Of `promptTokens`, those "read from the prompt cache". */
  readonly cachedTokens: number;
}

/**
 * Which provider's OpenAI-compatible layer the fake plays (docs/models-and-usage.md,
 * "Providers"): where its chat completions live and how its `usage` looks.
 * - `openai`: `/v1/chat/completions`; `usage.prompt_tokens_details.cached_tokens` always sent.
 * - `anthropic`: `/v1/chat/completions` (base URL `…/v1/`, trailing slash); no
 *   `prompt_tokens_details` (the compatibility layer does no prompt caching).
 * - `gemini`: `/v1beta/openai/chat/completions`; `prompt_tokens_details` only when tokens were
 *   cached.
 */
export type FakeProvider = "openai" | "anthropic" | "gemini";

/** The path prefix of a provider's compatible API (what its base URL ends with). */
export function providerPrefix(provider: FakeProvider): string {
  return provider === "gemini" ? "/v1beta/openai" : "/v1";
}

/** The base URL a provider's documentation gives, on the fake's origin. */
export function providerBaseUrl(origin: string, provider: FakeProvider): string {
  switch (provider) {
    case "openai":
      return `${origin}/v1`;
    case "anthropic":
      return `${origin}/v1/`;
    case "gemini":
      return `${origin}/v1beta/openai/`;
  }
}

/**
 * Token counts derived from a request when no reply scripted them: the prompt as the fake
 * counts it (`promptTokens` of tokens.ts, the real tokenizer), the answer's tokens (at least 1),
 * and, once a request carries an earlier answer (a conversation going on), half of the prompt
 * "cached". Deterministic, so tests can compute what a run should have cost.
 */
export function derivedUsage(
  body: ChatRequestBody,
  promptTokens: number,
  answerTokens: number,
): FakeUsage {
  const continued = body.messages.some((message) => message.role === "assistant");
  return {
    promptTokens,
    completionTokens: Math.max(1, answerTokens),
    cachedTokens: continued ? Math.floor(promptTokens / 2) : 0,
  };
}

/** The `usage` object of a completion, in `provider`'s shape. */
export function usageBody(usage: FakeUsage, provider: FakeProvider): Record<string, unknown> {
  const counts = {
    prompt_tokens: usage.promptTokens,
    completion_tokens: usage.completionTokens,
    total_tokens: usage.promptTokens + usage.completionTokens,
  };
  if (provider === "anthropic") return counts;
  if (provider === "gemini" && usage.cachedTokens === 0) return counts;
  return { ...counts, prompt_tokens_details: { cached_tokens: usage.cachedTokens } };
}

/** Sums the usage a fake reported. */
export function sumUsage(reports: readonly (FakeUsage | undefined)[]): FakeUsage {
  return reports.reduce<FakeUsage>(
    (sum, usage) =>
      usage === undefined
        ? sum
        : {
            promptTokens: sum.promptTokens + usage.promptTokens,
            completionTokens: sum.completionTokens + usage.completionTokens,
            cachedTokens: sum.cachedTokens + usage.cachedTokens,
          },
    { promptTokens: 0, completionTokens: 0, cachedTokens: 0 },
  );
}
