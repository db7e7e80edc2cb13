import { DiscordAPIError, HTTPError } from "discord.js";
import { describe, expect, it } from "vitest";
import { RateLimitedError } from "../../delivery/retry.js";
import { chatUnreachable, DiscordRequestError, interactionGone, toRequestError } from "./errors.js";

/** Discord's answer to a message create, as discord.js's REST throws it. */
const refusal = (status: number, code: number, message: string) =>
  new DiscordAPIError(
    { code, message },
    code,
    status,
    "POST",
    "https://discord.com/api/v10/channels/1/messages",
    { body: {} },
  );

describe("a channel gone for the bot", () => {
  it.each([
    [403, 50007, "Cannot send messages to this user"],
    [404, 10003, "Unknown Channel"],
    [403, 50001, "Missing Access"],
  ])(
    "is told by %i with code %i (%s), before and after the send gives up",
    (status, code, message) => {
      const error = refusal(status, code, message);
      expect(chatUnreachable(error)).toBe(true);
      const failed = toRequestError("createMessage", error);
      expect(failed).toBeInstanceOf(DiscordRequestError);
      expect(chatUnreachable(failed)).toBe(true);
    },
  );

  it.each([
    [403, 50013, "Missing Permissions"],
    [400, 50035, "Invalid Form Body"],
    [404, 10008, "Unknown Message"],
    [413, 40005, "Request entity too large"],
  ])("is not told by %i with code %i (%s)", (status, code, message) => {
    expect(chatUnreachable(refusal(status, code, message))).toBe(false);
    expect(chatUnreachable(toRequestError("createMessage", refusal(status, code, message)))).toBe(
      false,
    );
  });

  it("is not told by a server error, a rate limit or anything else", () => {
    const server = new HTTPError(502, "Bad Gateway", "POST", "https://discord.com/api", {
      body: {},
    });
    expect(chatUnreachable(server)).toBe(false);
    expect(chatUnreachable(new RateLimitedError(30, 1))).toBe(false);
    expect(chatUnreachable(new Error("Unknown Channel"))).toBe(false);
    expect(chatUnreachable(undefined)).toBe(false);
  });
});

describe("a 401", () => {
  it("refuses the bot token, but an interaction's expired token is no token refusal", () => {
    const login = toRequestError("login", refusal(401, 0, "401: Unauthorized"));
    expect(login).toMatchObject({ code: "MG_DISCORD_TOKEN_REFUSED", status: 401 });
    // An answer to a slash command after its 15 minutes: the bot's token is fine.
    const late = toRequestError("answer", refusal(401, 50027, "Invalid Webhook Token"));
    expect(late).toMatchObject({ code: "MG_DISCORD_REQUEST_FAILED", status: 401 });
    expect(interactionGone(late)).toBe(true);
    expect(interactionGone(login)).toBe(false);
  });
});
