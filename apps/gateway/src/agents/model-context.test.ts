import { describe, expect, it } from "vitest";
import { Defaults } from "../defaults.js";
import { contextTokensFor } from "./model-context.js";

describe("contextTokensFor", () => {
  it.each([
    ["gpt-4o-mini", 128_000],
    ["openai/gpt-4.1-mini", 1_047_576],
    ["o3-mini", 200_000],
    ["claude-sonnet-4-5", 200_000],
    ["gpt-4", 8_192],
    ["gpt-3.5-turbo-0125", 16_385],
  ])("knows the context of %s", (model, tokens) => {
    expect(contextTokensFor(model)).toBe(tokens);
  });

  it("takes the configured size over the known one, and falls back for unknown names", () => {
    expect(contextTokensFor("gpt-4o", 16_000)).toBe(16_000);
    expect(contextTokensFor("my-local-model")).toBe(Defaults.compaction.fallbackContextTokens);
    expect(contextTokensFor("gpt-4o-but-not-really-o")).toBe(128_000);
  });
});
