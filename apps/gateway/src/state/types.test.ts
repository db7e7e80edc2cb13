import { describe, expect, it } from "vitest";
import { isChatMessage } from "./types.js";

const call = { id: "c", type: "function", function: { name: "terminal", arguments: "{}" } };

describe("isChatMessage", () => {
  it.each([
    [{ role: "system", content: "s" }],
    [{ role: "user", content: "u" }],
    [{ role: "assistant", content: "a" }],
    [{ role: "assistant", content: null, tool_calls: [call] }],
    [{ role: "tool", content: "out", tool_call_id: "c" }],
  ])("accepts %j", (message) => {
    expect(isChatMessage(message)).toBe(true);
  });

  it.each([
    [null],
    [[]],
    ["user"],
    [{ role: "robot", content: "x" }],
    [{ role: "user" }],
    [{ role: "user", content: null }],
    [{ role: "assistant", content: 3 }],
    [{ role: "assistant", content: null, tool_calls: [{ ...call, type: "custom" }] }],
    [{ role: "assistant", content: null, tool_calls: "nope" }],
    [{ role: "tool", content: "out" }],
  ])("refuses %j", (message) => {
    expect(isChatMessage(message)).toBe(false);
  });
});
