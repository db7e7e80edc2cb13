import { describe, expect, it } from "vitest";
import type { ModelSettings } from "../config/types.js";
import { Defaults } from "../defaults.js";
import { contextTokensOf, costOf, modelChain, usageOf } from "./models.js";

const entry = (name: string): ModelSettings => ({
  name,
  baseUrl: "http://h/v1",
  model: `${name}-id`,
});
const settings = {
  models: [entry("a"), entry("b"), entry("c")],
  defaultModel: "b",
  fallback: ["c", "a", "c"],
};

describe("modelChain", () => {
  it("starts from the pick, then the fallback entries not already in front, once each", () => {
    expect(modelChain(settings, "a").map((m) => m.name)).toEqual(["a", "c"]);
    expect(modelChain(settings, "c").map((m) => m.name)).toEqual(["c", "a"]);
  });

  it("uses the default without a pick, or for a pick the config no longer has", () => {
    expect(modelChain(settings, undefined).map((m) => m.name)).toEqual(["b", "c", "a"]);
    expect(modelChain(settings, "gone").map((m) => m.name)).toEqual(["b", "c", "a"]);
  });
});

describe("usageOf", () => {
  it("reads prompt, completion and cached tokens", () => {
    expect(
      usageOf({
        usage: {
          prompt_tokens: 120,
          completion_tokens: 30,
          total_tokens: 150,
          prompt_tokens_details: { cached_tokens: 100 },
        },
      }),
    ).toEqual({ inputTokens: 120, outputTokens: 30, cachedTokens: 100 });
  });

  it("counts missing or malformed fields as 0, and never more cached than input", () => {
    expect(usageOf({ usage: { prompt_tokens: 5 } })).toEqual({
      inputTokens: 5,
      outputTokens: 0,
      cachedTokens: 0,
    });
    expect(
      usageOf({
        usage: {
          prompt_tokens: "9",
          completion_tokens: -3,
          prompt_tokens_details: { cached_tokens: 50 },
        },
      }),
    ).toEqual({ inputTokens: 0, outputTokens: 0, cachedTokens: 0 });
    expect(usageOf({ choices: [] })).toBeUndefined();
    expect(
      usageOf({ usage: { prompt_tokens: 2 ** 62, completion_tokens: Number.POSITIVE_INFINITY } }),
    ).toEqual({
      inputTokens: Defaults.models.maxCallTokens,
      outputTokens: Defaults.models.maxCallTokens,
      cachedTokens: 0,
    });
    expect(usageOf({ usage: { prompt_tokens: Number.NaN } })?.inputTokens).toBe(0);
    expect(usageOf(null)).toBeUndefined();
  });
});

describe("costOf", () => {
  const usage = { inputTokens: 1_000_000, outputTokens: 500_000, cachedTokens: 400_000 };
  it("prices uncached input, cached input and output per million tokens", () => {
    expect(costOf(usage, { input: 2, output: 8, cachedInput: 0.5 })).toBeCloseTo(
      0.6 * 2 + 0.4 * 0.5 + 0.5 * 8,
    );
  });

  it("prices cached input as input without a cachedInput price, and is 0 without prices", () => {
    expect(costOf(usage, { input: 2, output: 8 })).toBeCloseTo(2 + 4);
    expect(costOf(usage, undefined)).toBe(0);
  });
});

describe("contextTokensOf", () => {
  it("is the entry's, else the known size of its model, else the default", () => {
    expect(contextTokensOf({ model: "x", contextTokens: 200_000 })).toBe(200_000);
    expect(contextTokensOf({ model: "claude-sonnet-4-5" })).toBe(200_000);
    expect(contextTokensOf({ model: "x" })).toBe(Defaults.models.contextTokens);
  });
});
