import type { ChatCompletionMessage } from "openai/resources/chat/completions";
import { describe, expect, it } from "vitest";
import type { ChatMessage } from "../state/types.js";
import { functionToolCalls, toAssistantMessage, trimToTurnBoundary } from "./openai-history.js";
import { buildSystemPrompt, SANDBOX_PROMPT } from "./openai-prompt.js";

const call = {
  id: "c1",
  type: "function" as const,
  function: { name: "terminal", arguments: "{}" },
};

describe("trimToTurnBoundary", () => {
  it("drops a cut-off tool exchange at the start", () => {
    const history: ChatMessage[] = [
      { role: "tool", tool_call_id: "c0", content: "x" },
      { role: "assistant", content: "done" },
      { role: "user", content: "next" },
      { role: "assistant", content: "ok" },
    ];
    expect(trimToTurnBoundary(history)).toEqual(history.slice(2));
  });

  it("returns nothing when no user message is left", () => {
    expect(trimToTurnBoundary([{ role: "assistant", content: "orphan" }])).toEqual([]);
  });
});

describe("assistant messages from the model", () => {
  const message: ChatCompletionMessage = {
    role: "assistant",
    content: null,
    refusal: null,
    tool_calls: [call, { id: "c2", type: "custom", custom: { name: "x", input: "" } }],
  };

  it("keep function calls only", () => {
    expect(functionToolCalls(message)).toEqual([call]);
  });

  it("are stored with content and calls, and without a calls field when there are none", () => {
    expect(toAssistantMessage(message, [call])).toEqual({
      role: "assistant",
      content: null,
      tool_calls: [call],
    });
    expect(toAssistantMessage({ ...message, content: "hi" }, [])).toEqual({
      role: "assistant",
      content: "hi",
    });
  });

  it("carry {} for arguments that are not a JSON object, which strict endpoints refuse", () => {
    const args = (text: string) => ({ ...call, function: { name: "terminal", arguments: text } });
    const stored = toAssistantMessage(message, [
      args('{"command": "ls'),
      args(""),
      args("[1]"),
      args('{"command":"ls"}'),
    ]);
    expect(stored.tool_calls?.map((c) => c.function.arguments)).toEqual([
      "{}",
      "{}",
      "{}",
      '{"command":"ls"}',
    ]);
  });
});

describe("buildSystemPrompt", () => {
  it("always explains the sandbox and MEDIA lines, then the configured prompt", () => {
    expect(SANDBOX_PROMPT).toMatch(/\/workspace/);
    expect(SANDBOX_PROMPT).toMatch(/MEDIA:\/absolute\/path/);
    expect(buildSystemPrompt(undefined)).toBe(SANDBOX_PROMPT);
    expect(buildSystemPrompt("  ")).toBe(SANDBOX_PROMPT);
    expect(buildSystemPrompt("Be terse.")).toBe(`${SANDBOX_PROMPT}\n\nBe terse.`);
  });
});
