import { describe, expect, it } from "vitest";
import type { ModelAgentSettings } from "../agents/models.js";
import { chooseModel, describeChoice, describeModels, type ModelStore } from "./model.js";

const settings: ModelAgentSettings = {
  kind: "openai",
  models: [
    { name: "main", baseUrl: "http://h/v1", model: "gpt-x", prices: { input: 2.5, output: 10 } },
    { name: "Claude", baseUrl: "http://h/v1", model: "claude-x", contextTokens: 200_000 },
  ],
  defaultModel: "main",
  fallback: ["Claude"],
  memberModels: ["main"],
  maxToolRounds: 8,
};

function memoryStore(): ModelStore & { picks: Map<string, string> } {
  const picks = new Map<string, string>();
  return {
    picks,
    sessionModel: async (key) => picks.get(key),
    setSessionModel: async (key, model) => {
      if (model === undefined) picks.delete(key);
      else picks.set(key, model);
    },
  };
}

describe("chooseModel", () => {
  it("switches an admin to any entry, by name in any case, and back to the default storing nothing", async () => {
    const store = memoryStore();
    const choice = await chooseModel(store, settings, "k", "claude", true);
    expect(choice).toMatchObject({ status: "switched", unchanged: false });
    expect(store.picks.get("k")).toBe("Claude");
    expect(describeChoice(choice)).toBe(
      "✅ This session now uses Claude (claude-x). The conversation goes on.",
    );
    expect(await chooseModel(store, settings, "k", "main", true)).toMatchObject({
      status: "switched",
    });
    expect(store.picks.has("k")).toBe(false);
    expect(await chooseModel(store, settings, "k", "main", false)).toMatchObject({
      status: "switched",
      unchanged: true,
    });
  });

  it("refuses a member an entry outside memberModels and an unknown name, changing nothing", async () => {
    const store = memoryStore();
    const refused = await chooseModel(store, settings, "k", "Claude", false);
    expect(refused.status).toBe("not_allowed");
    const unknown = await chooseModel(store, settings, "k", "nope", false);
    expect(describeChoice(unknown)).toBe(
      'No model is named "nope". Pick one of: main (/model <name>).',
    );
    expect(store.picks.size).toBe(0);
  });

  it("echoes at most 64 characters of an unknown name, never half an emoji", async () => {
    const name = `${"a".repeat(63)}😀${"b".repeat(100)}`;
    const text = describeChoice(await chooseModel(memoryStore(), settings, "k", name, false));
    expect(text).toBe(`No model is named "${"a".repeat(63)}". Pick one of: main (/model <name>).`);
  });
});

describe("describeModels", () => {
  it("lists what the user may pick, marking the session's model, with sizes, prices and the fallback", async () => {
    const store = memoryStore();
    expect(await describeModels(store, settings, "k", true)).toBe(
      [
        "Model of this session: main (gpt-x), the default.",
        "You may pick:",
        "  • main — gpt-x, 8k context, 2.5 in / 10 out per M tokens",
        "  ◦ Claude — claude-x, 200k context",
        "Switch with /model <name>; the conversation goes on.",
        "When it fails: Claude.",
      ].join("\n"),
    );
    expect(await describeModels(store, settings, "k", false)).not.toContain("Claude —");
  });
});
