import { GrammyError, HttpError } from "grammy";
import { describe, expect, it } from "vitest";
import { RateLimitedError } from "../../delivery/retry.js";
import { redactText } from "../../redact.js";
import {
  AttemptError,
  chatUnreachable,
  classifyTelegramError,
  failureFacts,
  mayHaveArrived,
  TelegramDeliveryError,
} from "./errors.js";

const token = "987654:AAH-secret_token_value";

const apiError = (code: number, description: string, retryAfter?: number) =>
  new GrammyError(
    "Call to 'sendMessage' failed!",
    {
      ok: false,
      error_code: code,
      description,
      ...(retryAfter === undefined ? {} : { parameters: { retry_after: retryAfter } }),
    },
    "sendMessage",
    {},
  );

const transport = (code: string) =>
  new HttpError(
    "Network request for 'sendMessage' failed!",
    Object.assign(new Error(`request failed, reason: ${code}`), { code }),
  );

describe("classifyTelegramError", () => {
  it.each([
    [
      "429 with retry_after",
      apiError(429, "Too Many Requests", 5),
      { retry: true, afterSeconds: 5 },
      { retry: true, afterSeconds: 5 },
    ],
    ["500", apiError(500, "Internal Server Error"), { retry: false }, { retry: true }],
    ["502", apiError(502, "Bad Gateway"), { retry: false }, { retry: true }],
    ["400", apiError(400, "Bad Request: chat not found"), { retry: false }, { retry: false }],
    ["403", apiError(403, "Forbidden: blocked"), { retry: false }, { retry: false }],
    ["connection refused", transport("ECONNREFUSED"), { retry: true }, { retry: true }],
    ["DNS failure", transport("ENOTFOUND"), { retry: true }, { retry: true }],
    ["reset after sending", transport("ECONNRESET"), { retry: false }, { retry: true }],
    [
      "reset before the body was written",
      new AttemptError(transport("ECONNRESET"), true),
      { retry: true },
      { retry: true },
    ],
    [
      "timeout after sending",
      new AttemptError(transport("ABORT_ERR"), false, 15_000),
      { retry: false },
      { retry: true },
    ],
    ["anything else", new Error("boom"), { retry: false }, { retry: false }],
  ])("%s", (_name, error, atMostOnce, atLeastOnce) => {
    expect(classifyTelegramError(error)).toEqual(atMostOnce);
    expect(classifyTelegramError(error, "at-most-once")).toEqual(atMostOnce);
    expect(classifyTelegramError(error, "at-least-once")).toEqual(atLeastOnce);
  });

  it("tells a send that may have arrived from one that cannot have", () => {
    expect(mayHaveArrived(apiError(502, "Bad Gateway"))).toBe(true);
    expect(mayHaveArrived(apiError(429, "Too Many Requests", 3))).toBe(false);
    expect(mayHaveArrived(transport("ECONNRESET"))).toBe(true);
    expect(mayHaveArrived(new AttemptError(transport("ECONNRESET"), true))).toBe(false);
    expect(mayHaveArrived(transport("ECONNREFUSED"))).toBe(false);
    const garbled = new GrammyError("x", { ok: false } as never, "sendMessage", {});
    expect(mayHaveArrived(garbled)).toBe(true);
    expect(classifyTelegramError(garbled)).toEqual({ retry: false });
    expect(failureFacts(garbled, token).description).toBe("undefined");
  });
});

describe("token hygiene", () => {
  it("removes the token and bot URL segments from text", () => {
    const text = `request to http://127.0.0.1:1/bot${token}/sendMessage failed; other /bot1:abc/x; ${token}`;
    const clean = redactText(text, [token]);
    expect(clean).not.toContain(token);
    expect(clean).not.toContain("AAH-secret");
    expect(clean).not.toContain("1:abc");
  });

  it("keeps an HttpError's cause but not the URL token it embeds", () => {
    const cause = new Error(
      `request to http://127.0.0.1:9/bot${token}/sendPhoto failed, reason: socket hang up`,
    );
    const facts = failureFacts(
      new HttpError("Network request for 'sendPhoto' failed!", cause),
      token,
    );
    expect(facts.description).toContain("socket hang up");
    expect(JSON.stringify(facts)).not.toContain(token);
  });

  it("builds a TelegramDeliveryError that knows rate limits and photo rejections", () => {
    const limited = new TelegramDeliveryError(
      "sendPhoto",
      failureFacts(new RateLimitedError(90, 1), token),
    );
    expect(limited).toMatchObject({ rateLimited: true, retryAfterSeconds: 90, status: 429 });
    const photo = new TelegramDeliveryError(
      "sendPhoto",
      failureFacts(apiError(400, "Bad Request: PHOTO_INVALID_DIMENSIONS"), token),
    );
    expect(photo.photoRejected).toBe(true);
    const chat = new TelegramDeliveryError(
      "sendPhoto",
      failureFacts(apiError(400, "Bad Request: chat not found"), token),
    );
    expect(chat.photoRejected).toBe(false);
  });
});

describe("a chat gone for the bot", () => {
  it.each([
    [403, "Forbidden: bot was blocked by the user"],
    [403, "Forbidden: user is deactivated"],
    [403, "Forbidden: bot was kicked from the group chat"],
    [403, "Forbidden: bot was kicked from the supergroup chat"],
    [400, "Bad Request: chat not found"],
  ])("is told by %i %s", (status, description) => {
    expect(chatUnreachable(status, description)).toBe(true);
    const error = new TelegramDeliveryError(
      "sendMessage",
      failureFacts(apiError(status, description), token),
    );
    expect(error.chatUnreachable).toBe(true);
    expect(classifyTelegramError(apiError(status, description))).toEqual({ retry: false });
  });

  it.each([
    [403, "Forbidden: bot is not a member of the channel chat"],
    [403, "Forbidden: not enough rights to send photos to the chat"],
    [400, "Bad Request: message text is empty"],
    [400, "Bad Request: PHOTO_INVALID_DIMENSIONS"],
    [403, "Bad Request: chat not found"],
    [400, "Forbidden: bot was blocked by the user"],
    [500, "Internal Server Error"],
  ])("is not told by %i %s", (status, description) => {
    expect(chatUnreachable(status, description)).toBe(false);
    const error = new TelegramDeliveryError(
      "sendMessage",
      failureFacts(apiError(status, description), token),
    );
    expect(error.chatUnreachable).toBe(false);
  });

  it("is not told by a rate limit or a transport failure", () => {
    const limited = new TelegramDeliveryError(
      "sendMessage",
      failureFacts(new RateLimitedError(9, 1), token),
    );
    expect(limited.chatUnreachable).toBe(false);
    const reset = new TelegramDeliveryError(
      "sendMessage",
      failureFacts(transport("ECONNRESET"), token),
    );
    expect(reset.chatUnreachable).toBe(false);
  });
});
