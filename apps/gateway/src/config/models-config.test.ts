import { describe, expect, it } from "vitest";
import { emptyEnv, type GatewayEnv } from "./env.js";
import { ConfigError } from "./errors.js";
import { resolveConfig } from "./load.js";

const env: GatewayEnv = { ...emptyEnv("/home/u") };
const main = { name: "main", baseUrl: "http://127.0.0.1:1/v1", model: "gpt-x", apiKey: "sk-main" };
const backup = { name: "backup", baseUrl: "http://127.0.0.1:2/v1", model: "claude-x" };

function agentOf(agent: Record<string, unknown>) {
  return resolveConfig({ profiles: [{ name: "default", agent }] }, { env }).profiles[0]?.agent;
}

function messageOf(agent: Record<string, unknown>): string {
  try {
    agentOf(agent);
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("agent.models", () => {
  it("refuses a cost budget that no model's prices could ever reach", () => {
    expect(() =>
      agentOf({ kind: "openai", baseUrl: main.baseUrl, model: "gpt-x", budget: { dailyCost: 1 } }),
    ).toThrow(
      /budget\.dailyCost: got 1, expected a models list whose entries have prices: without prices every call costs 0/,
    );
    expect(() =>
      agentOf({ kind: "openai", models: [main, backup], budget: { dailyCost: 1 } }),
    ).toThrow(/budget\.dailyCost: got 1, expected prices on the models entries/);
    // One priced entry is enough: an unpriced one beside it is a free (local) model.
    expect(
      agentOf({
        kind: "openai",
        models: [{ ...main, prices: { input: 2, output: 8 } }, backup],
        budget: { dailyCost: 1 },
      }),
    ).toMatchObject({ budget: { dailyCost: 1 } });
  });

  it("takes named entries with prices, a default, a fallback chain, member models and a budget", () => {
    expect(
      agentOf({
        kind: "openai",
        models: [
          { ...main, contextTokens: 128000, prices: { input: 2, output: 8 }, timeoutSeconds: 30 },
          backup,
        ],
        default: "backup",
        fallback: ["main"],
        memberModels: ["main"],
        budget: { dailyTokens: 100000, dailyCost: 2.5 },
      }),
    ).toEqual({
      kind: "openai",
      models: [
        { ...main, contextTokens: 128000, prices: { input: 2, output: 8 }, timeoutMs: 30000 },
        backup,
      ],
      defaultModel: "backup",
      fallback: ["main"],
      memberModels: ["main"],
      budget: { dailyTokens: 100000, dailyCost: 2.5 },
      maxToolRounds: 8,
    });
  });

  it("defaults to the first entry and no fallback", () => {
    expect(agentOf({ kind: "openai", models: [main, backup] })).toMatchObject({
      defaultModel: "main",
      fallback: [],
    });
  });

  it("makes the one-model form's contextTokens its entry's", () => {
    expect(
      agentOf({ kind: "openai", baseUrl: "http://h/v1", model: "m", contextTokens: 6000 }),
    ).toMatchObject({ models: [{ name: "m", model: "m", contextTokens: 6000 }] });
  });

  it.each([
    [
      "both forms",
      { kind: "openai", baseUrl: "http://h/v1", model: "m", models: [main] },
      "profiles[0].agent.models: got a list, expected either models or baseUrl/model/apiKey, not both: move them into a models entry",
    ],
    [
      "a fallback naming no entry",
      { kind: "openai", models: [main], fallback: ["gone"] },
      'profiles[0].agent.fallback[0]: got "gone", expected one of the models entries (main)',
    ],
    [
      "a duplicate name",
      { kind: "openai", models: [main, { ...backup, name: "main" }] },
      'profiles[0].agent.models[1].name: got "main", expected a unique name ("main" is used twice)',
    ],
    [
      "names that differ only in case (/model picks by name, case-insensitively)",
      { kind: "openai", models: [main, { ...backup, name: "Main" }] },
      'profiles[0].agent.models[1].name: got "Main", expected a unique name, whatever its case ("main" is used already: /model main could not tell them apart)',
    ],
    [
      "a name with a space",
      { kind: "openai", models: [{ ...main, name: "my model" }] },
      'profiles[0].agent.models[0].name: got "my model", expected a model entry name',
    ],
    [
      "a fallback without models",
      { kind: "openai", baseUrl: "http://h/v1", model: "m", fallback: ["m"] },
      "profiles[0].agent.fallback: got a list, expected names of models entries: add a models list",
    ],
    [
      "a negative price",
      { kind: "openai", models: [{ ...main, prices: { input: -1, output: 1 } }] },
      "profiles[0].agent.models[0].prices.input: got -1, expected a price per million tokens, 0 or more",
    ],
    [
      "agent.contextTokens beside a models list",
      { kind: "openai", models: [main], contextTokens: 6000 },
      "profiles[0].agent.contextTokens: got 6000, expected a models entry's contextTokens",
    ],
    [
      "neither form",
      { kind: "openai" },
      "profiles[0].agent.baseUrl: got nothing, expected an http(s) URL, or a models list",
    ],
  ])("refuses %s, saying what to do", (_what, agent, expected) => {
    expect(messageOf(agent)).toContain(expected);
  });
});
