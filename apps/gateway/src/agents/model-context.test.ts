import { describe, expect, it } from "vitest";
import { knownContextTokens } from "./model-context.js";

describe("knownContextTokens", () => {
  it.each([
    ["gpt-4o-mini", 128_000],
    ["openai/gpt-4.1-mini", 1_047_576],
    ["o3-mini", 200_000],
    ["claude-sonnet-4-5", 200_000],
    ["gpt-4", 8_192],
    ["gpt-3.5-turbo-0125", 16_385],
  ])("knows the context of %s", (model, tokens) => {
    expect(knownContextTokens(model)).toBe(tokens);
  });

  it("knows nothing of a name it does not list", () => {
    expect(knownContextTokens("my-local-model")).toBeUndefined();
    expect(knownContextTokens("gpt-4o-but-not-really-o")).toBe(128_000);
  });
});
