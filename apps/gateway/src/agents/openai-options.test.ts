import { describe, expect, it } from "vitest";
import { OpenAIAgentOptionsError } from "./openai-errors.js";
import { OpenAIAgentDefaults, resolveOpenAIOptions } from "./openai-options.js";

const base = { baseUrl: "http://127.0.0.1:1/v1", apiKey: "sk-x", model: "m" };

describe("resolveOpenAIOptions", () => {
  it("applies the defaults", () => {
    expect(resolveOpenAIOptions(base)).toEqual(OpenAIAgentDefaults);
    expect(OpenAIAgentDefaults.maxToolRounds).toBe(8);
  });

  it("keeps given limits, zero tool rounds included", () => {
    expect(resolveOpenAIOptions({ ...base, maxToolRounds: 0, maxRetries: 0 })).toMatchObject({
      maxToolRounds: 0,
      maxRetries: 0,
    });
  });

  it.each([
    ["baseUrl", { baseUrl: "api.openai.com/v1" }],
    ["baseUrl", { baseUrl: "ftp://host/v1" }],
    ["model", { model: " " }],
    ["apiKey", { apiKey: "" }],
    ["maxToolRounds", { maxToolRounds: -1 }],
    ["maxToolRounds", { maxToolRounds: 1.5 }],
    ["timeoutMs", { timeoutMs: 0 }],
    ["maxToolOutputChars", { maxToolOutputChars: Number.NaN }],
    ["imageMaxBytes", { imageMaxBytes: 0 }],
    ["transcription.baseUrl", { transcription: { baseUrl: "localhost:9000", model: "w" } }],
    ["transcription.model", { transcription: { baseUrl: "http://h/v1", model: "" } }],
    ["transcription.apiKey", { transcription: { baseUrl: "http://h/v1", model: "w", apiKey: "" } }],
  ])("refuses a bad %s with a message naming it", (option, patch) => {
    let error: unknown;
    try {
      resolveOpenAIOptions({ ...base, ...patch });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(OpenAIAgentOptionsError);
    expect(error).toMatchObject({ option });
    expect((error as Error).message).toContain(`option ${option}:`);
  });

  it("does not echo a malformed base URL (it may carry a secret)", () => {
    expect(() => resolveOpenAIOptions({ ...base, baseUrl: "sk-live-secret" })).toThrow(
      expect.objectContaining({ message: expect.not.stringContaining("sk-live-secret") }),
    );
  });
});
