import { describe, expect, it } from "vitest";
import {
  endpointHost,
  OpenAIEndpointError,
  redactSecret,
  toEndpointError,
} from "./openai-errors.js";
import { openaiSdk } from "./openai-sdk.js";

// The SDK build the gateway checks its errors against (openai-sdk.ts).
const { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } = openaiSdk();

const context = { host: "llm.internal:8443", model: "m-1", apiKey: "sk-secret-123456" };

describe("endpointHost", () => {
  it.each([
    ["https://api.openai.com/v1", "api.openai.com"],
    ["http://127.0.0.1:4000/v1", "127.0.0.1:4000"],
    ["https://user:sk-secret-123456@llm.internal:8443/v1", "llm.internal:8443"],
    ["not a url sk-secret-123456", "invalid-url"],
  ])("%s → %s", (url, host) => {
    expect(endpointHost(url)).toBe(host);
  });
});

describe("redactSecret", () => {
  it("removes every occurrence but ignores trivially short secrets", () => {
    expect(redactSecret("a sk-x1 b sk-x1", "sk-x1")).toBe("a [redacted] b [redacted]");
    expect(redactSecret("abc", "ab")).toBe("abc");
  });
});

describe("toEndpointError", () => {
  it("names status, host, model and the endpoint's message without the key", () => {
    const sdk = APIError.generate(
      401,
      { error: { message: "Incorrect API key provided: sk-secret-123456" } },
      undefined,
      new Headers({ "x-request-id": "req_7" }),
    );
    const error = toEndpointError(sdk, context);
    expect(error).toBeInstanceOf(OpenAIEndpointError);
    expect(error).toMatchObject({
      kind: "http",
      status: 401,
      host: "llm.internal:8443",
      requestId: "req_7",
    });
    expect(error?.message).toBe(
      'model endpoint llm.internal:8443 answered HTTP 401 (model "m-1"): Incorrect API key provided: [redacted]',
    );
    expect(error?.cause).toBeUndefined();
  });

  it("cuts a long error body", () => {
    const sdk = APIError.generate(502, undefined, "<html>".padEnd(5_000, "x"), new Headers());
    expect(toEndpointError(sdk, context)?.message.length).toBeLessThan(450);
  });

  it("cuts an error body without splitting an emoji, which Telegram would refuse", () => {
    // "x" then emoji: the 300th unit is the first half of one.
    const sdk = APIError.generate(500, undefined, `x${"😀".repeat(400)}`, new Headers());
    const message = toEndpointError(sdk, context)?.message ?? "";
    expect(message).toContain("😀");
    expect(message).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it("tells timeouts and unreachable endpoints apart", () => {
    expect(toEndpointError(new APIConnectionTimeoutError(), context)?.kind).toBe("timeout");
    const refused = Object.assign(new TypeError("fetch failed"), {
      cause: Object.assign(new Error("connect"), { code: "ECONNREFUSED" }),
    });
    const error = toEndpointError(new APIConnectionError({ cause: refused }), context);
    expect(error?.kind).toBe("connection");
    expect(error?.message).toMatch(/could not be reached .*: ECONNREFUSED$/);
    // undici's `request` (the model clients' fetch) rejects with the system error itself.
    const direct = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), {
      code: "ECONNREFUSED",
    });
    const undici = toEndpointError(new APIConnectionError({ cause: direct }), context);
    expect(undici?.message).toMatch(/could not be reached .*: ECONNREFUSED$/);
  });

  it("leaves aborts and foreign errors alone", () => {
    expect(toEndpointError(new APIUserAbortError(), context)).toBeUndefined();
    expect(toEndpointError(new TypeError("bug"), context)).toBeUndefined();
  });
});
