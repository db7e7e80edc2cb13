import type { AgentSettings, ModelPrices, ModelSettings } from "../config/types.js";
import { Defaults } from "../defaults.js";
import { knownContextTokens } from "./model-context.js";

/** The `openai` variant of the agent settings: the one that has models. */
export type ModelAgentSettings = Extract<AgentSettings, { kind: "openai" }>;

/**
 * The context window of a model entry, in tokens: its `contextTokens` (the single-model form's
 * `agent.contextTokens`), else the model's known size (`knownContextTokens`), else
 * `Defaults.models.contextTokens`. The one place a context size is decided: `/model` shows it
 * and the context budget of compaction is a share of it.
 */
export function contextTokensOf(entry: Pick<ModelSettings, "contextTokens" | "model">): number {
  return entry.contextTokens ?? knownContextTokens(entry.model) ?? Defaults.models.contextTokens;
}

/** The entry named `name`, if the settings have one. */
export function modelNamed(
  settings: Pick<ModelAgentSettings, "models">,
  name: string,
): ModelSettings | undefined {
  return settings.models.find((entry) => entry.name === name);
}

/**
 * The models a turn tries, in order: the session's choice (the default when it has none or
 * names an entry the config no longer has), then the `fallback` entries not already in front.
 */
export function modelChain(
  settings: Pick<ModelAgentSettings, "models" | "defaultModel" | "fallback">,
  chosen: string | undefined,
): readonly ModelSettings[] {
  const first =
    (chosen === undefined ? undefined : modelNamed(settings, chosen)) ??
    modelNamed(settings, settings.defaultModel) ??
    settings.models[0];
  if (first === undefined) return [];
  const rest = settings.fallback
    .filter((name) => name !== first.name)
    .flatMap((name) => modelNamed(settings, name) ?? []);
  return [first, ...new Set(rest)];
}

/** Token counts of one model call, as the endpoint reported them. */
export interface TokenUsage {
  /** Prompt tokens, cached ones included. */
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** Of `inputTokens`, those the endpoint read from its prompt cache. */
  readonly cachedTokens: number;
}

/** A token figure: a positive number, at most `Defaults.models.maxCallTokens`; else 0. */
function count(value: unknown): number {
  if (typeof value !== "number" || !(value > 0)) return 0;
  return Math.min(Math.trunc(value), Defaults.models.maxCallTokens);
}

function record(value: unknown): Record<string, unknown> | undefined {
  return typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)
    : undefined;
}

/**
 * The token counts of a chat completion (or of a stream's last chunk, which carries `usage`
 * with `stream_options.include_usage`): `usage.prompt_tokens`, `usage.completion_tokens` and
 * `usage.prompt_tokens_details.cached_tokens` (OpenAI, Gemini; Anthropic's compatibility layer
 * reports no cached tokens there). Missing or malformed fields count 0, figures above
 * `Defaults.models.maxCallTokens` count that many; an answer without `usage` gives `undefined`
 * (docs/models-and-usage.md, "Providers").
 */
export function usageOf(response: unknown): TokenUsage | undefined {
  const usage = record(record(response)?.usage);
  if (usage === undefined) return undefined;
  const inputTokens = count(usage.prompt_tokens);
  return {
    inputTokens,
    outputTokens: count(usage.completion_tokens),
    cachedTokens: Math.min(inputTokens, count(record(usage.prompt_tokens_details)?.cached_tokens)),
  };
}

/**
 * What `usage` cost at `prices` (per million tokens): uncached input at `input`, cached input
 * at `cachedInput` (default `input`), output at `output`. No prices: 0.
 */
export function costOf(usage: TokenUsage, prices: ModelPrices | undefined): number {
  if (prices === undefined) return 0;
  const uncached = usage.inputTokens - usage.cachedTokens;
  const cached = prices.cachedInput ?? prices.input;
  return (
    (uncached * prices.input + usage.cachedTokens * cached + usage.outputTokens * prices.output) /
    1_000_000
  );
}
