import { pino } from "pino";
import { describe, expect, it } from "vitest";
import type { Agent, CompactRequest } from "../agents/types.js";
import { Defaults } from "../defaults.js";
import { compactConversation } from "./conversation.js";

const LoneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe("compactConversation", () => {
  it("cuts a long focus to its limit, never inside an emoji", async () => {
    const asked: CompactRequest[] = [];
    const agent: Agent = {
      kind: "openai",
      runTurn: () => Promise.reject(new Error("no turns here")),
      compact: async (request) => {
        asked.push(request);
        return { summarizedMessages: 3, beforeTokens: 900, afterTokens: 300 };
      },
    };
    const limit = Defaults.compaction.focusMaxChars;
    const focus = `${"a".repeat(limit - 1)}😀 and more`;

    const answer = await compactConversation(
      { agent, log: pino({ level: "silent" }) },
      { sessionKey: "k", sessionId: "s", user: "telegram:1" },
      focus,
      new AbortController().signal,
    );

    expect(answer).toMatch(/^🗜️ Compacted: 3 older messages summarized/);
    expect(asked[0]?.focus).toBe("a".repeat(limit - 1));
    expect(LoneSurrogate.test(asked[0]?.focus ?? "")).toBe(false);
  });
});
