import { describe, expect, it } from "vitest";
import { messageTokens, textTokens } from "./token-estimate.js";
import { tokenizer } from "./tokenizer.js";

describe("textTokens", () => {
  it("counts short and long texts as the tokenizer does, first time and from the cache", () => {
    const texts = ["hi", "ok", "", "a short line of chat", "long line ".repeat(100)];
    const expected = texts.map((text) => tokenizer().countTokens(text));
    expect(texts.map(textTokens)).toEqual(expected);
    expect(texts.map(textTokens)).toEqual(expected);
    // The same text as another string object (as read back from the database).
    expect(texts.map((text) => textTokens(JSON.parse(JSON.stringify(text))))).toEqual(expected);
  });

  it("keeps counting right once the caches dropped their oldest entries", () => {
    const many = Array.from({ length: 9_000 }, (_, i) => `line ${i} ${"x".repeat(i % 7)}`);
    const counted = many.map(textTokens);
    expect(counted.map((tokens, i) => tokens === tokenizer().countTokens(many[i]!))).not.toContain(
      false,
    );
    expect(textTokens(many[0]!)).toBe(tokenizer().countTokens(many[0]!));
  });
});

describe("messageTokens", () => {
  it("counts a frozen message as the same message unfrozen, every time", () => {
    const made = (i: number) => ({
      role: "assistant" as const,
      content: `an answer ${"long ".repeat(80 + i)}`,
      tool_calls: [
        {
          id: `call_${i}`,
          type: "function" as const,
          function: { name: "shell", arguments: JSON.stringify({ command: "ls ".repeat(i) }) },
        },
      ],
    });
    for (let i = 0; i < 3; i++) {
      const frozen = Object.freeze(made(i));
      const expected = messageTokens(made(i));
      expect(expected).toBeGreaterThan(80);
      expect([messageTokens(frozen), messageTokens(frozen)]).toEqual([expected, expected]);
    }
  });

  it("counts an unfrozen message again after it changed", () => {
    const message = { role: "user" as const, content: "a short question" };
    const before = messageTokens(message);
    message.content = "a much longer question, with many more words in it than the first one had";
    expect(messageTokens(message)).toBeGreaterThan(before);
  });
});
