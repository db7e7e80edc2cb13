import { errorCodeOf, MediagateError } from "@mediagate/io";
import {
  DiscordAPIError,
  DiscordjsError,
  DiscordjsErrorCodes,
  HTTPError,
  RateLimitError,
} from "discord.js";
import { RateLimitedError, type RetryVerdict } from "../../delivery/retry.js";

/**
 * Discord's answers for an interaction that can no longer be answered: 50027 Invalid Webhook
 * Token (its token lives 15 minutes; a 401 that says nothing about the bot token), 10015
 * Unknown Webhook, 10062 Unknown interaction.
 */
const InteractionGoneCodes: ReadonlySet<number | string> = new Set([50027, 10015, 10062]);

/** Whether a failed interaction answer says the interaction is gone (see above). */
export function interactionGone(error: unknown): boolean {
  return error instanceof DiscordRequestError && InteractionGoneCodes.has(error.discordCode ?? "");
}

/**
 * A Discord request failed for good (after the retry policy gave up), or the gateway closed for
 * good (`operation` = `gateway`). Carries the HTTP status and Discord's own error code
 * (`discordCode`: a JSON error code, or a gateway close code) when Discord answered, never the
 * request URL or body. `code` tells a refused token (401), a gateway closed for good and a
 * failed request apart.
 */
export class DiscordRequestError extends MediagateError {
  override readonly name = "DiscordRequestError";
  readonly code:
    | "MG_DISCORD_TOKEN_REFUSED"
    | "MG_DISCORD_GATEWAY_CLOSED"
    | "MG_DISCORD_REQUEST_FAILED";
  readonly platform = "discord";

  constructor(
    readonly operation: string,
    readonly status: number | undefined,
    readonly discordCode: number | string | undefined,
    message: string,
  ) {
    super(`discord ${operation} failed: ${message}`);
    // A 401 for an interaction's token (an answer after its 15 minutes) says nothing of the
    // bot's token: the operator must not be sent to reset it.
    this.code =
      status === 401 && !InteractionGoneCodes.has(discordCode ?? "")
        ? "MG_DISCORD_TOKEN_REFUSED"
        : operation === "gateway"
          ? "MG_DISCORD_GATEWAY_CLOSED"
          : "MG_DISCORD_REQUEST_FAILED";
  }
}

/**
 * Discord's JSON error codes that say a channel is gone for the bot, so that no message can
 * reach it: 10003 Unknown Channel (deleted), 50001 Missing Access (the bot was removed from the
 * server, or can no longer see the channel), 50007 Cannot send messages to this user (they
 * blocked the bot, or share no server with it any more). Other refusals (a missing permission
 * to attach files, a message too long) say nothing about the channel itself.
 */
const UnreachableCodes: ReadonlySet<number> = new Set([10003, 50001, 50007]);

/** Whether a failed send's error says the channel is unreachable for the bot. */
export function chatUnreachable(error: unknown): boolean {
  const code =
    error instanceof DiscordRequestError
      ? error.discordCode
      : error instanceof DiscordAPIError
        ? error.code
        : undefined;
  return typeof code === "number" && UnreachableCodes.has(code);
}

/** How one failed attempt should be treated by the retry policy. */
export type AttemptFailure =
  | { readonly kind: "rate_limited"; readonly retryAfterMs: number }
  | { readonly kind: "server_error"; readonly status: number }
  | { readonly kind: "network" }
  | { readonly kind: "rejected"; readonly status: number; readonly code: number | string };

const NetworkCodes = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ETIMEDOUT",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

/**
 * Classifies an error thrown by the delivery REST instance (`retries: 0`,
 * `rejectOnRateLimit: () => true`): a `RateLimitError` is a 429 (or an exhausted bucket),
 * `HTTPError` a 5xx, `DiscordAPIError` a 4xx Discord refused, and an `AbortError` (discord.js's
 * request timeout) or a socket error a transport failure. Message creates carry an enforced
 * nonce, so even a request that may have been processed is safe to repeat.
 */
export function classifyFailure(error: unknown): AttemptFailure | undefined {
  if (error instanceof RateLimitError)
    return { kind: "rate_limited", retryAfterMs: error.retryAfter };
  if (error instanceof HTTPError) return { kind: "server_error", status: error.status };
  if (error instanceof DiscordAPIError) {
    return error.status >= 500
      ? { kind: "server_error", status: error.status }
      : { kind: "rejected", status: error.status, code: error.code };
  }
  if (error instanceof DiscordjsError && error.code === DiscordjsErrorCodes.TokenInvalid) {
    return { kind: "rejected", status: 401, code: error.code }; // login's 401, rethrown by discord.js
  }
  if (!(error instanceof Error)) return undefined;
  if (error.name === "AbortError" || error.name === "TimeoutError") return { kind: "network" };
  const code = (error as { code?: unknown }).code;
  const causeCode = (error.cause as { code?: unknown } | undefined)?.code;
  if (
    (typeof code === "string" && NetworkCodes.has(code)) ||
    (typeof causeCode === "string" && NetworkCodes.has(causeCode)) ||
    error.message === "fetch failed"
  ) {
    return { kind: "network" };
  }
  return undefined;
}

/**
 * A log-safe summary of an error: name, status, code (Discord's, or a mediagate error's `MG_`
 * code), message (no URL, no request body).
 */
export function describeError(error: unknown): Record<string, unknown> {
  if (error instanceof DiscordAPIError) {
    return { name: error.name, status: error.status, code: error.code, message: error.message };
  }
  if (error instanceof HTTPError) return { name: error.name, status: error.status };
  if (error instanceof RateLimitError) return { name: error.name, retryAfterMs: error.retryAfter };
  if (error instanceof Error) {
    const code = errorCodeOf(error);
    return code === undefined
      ? { name: error.name, message: error.message }
      : { name: error.name, code, message: error.message };
  }
  return { message: String(error) };
}

/**
 * The shared retry policy's view of a Discord failure: 429 → retry after Discord's wait,
 * 5xx and transport failures → retry with backoff, anything else → give up.
 */
export function discordRetryVerdict(error: unknown): RetryVerdict {
  const failure = classifyFailure(error);
  if (failure === undefined || failure.kind === "rejected") return { retry: false };
  if (failure.kind === "rate_limited") {
    return { retry: true, afterSeconds: failure.retryAfterMs / 1000 };
  }
  return { retry: true };
}

/**
 * The error a send finally fails with: typed and log-safe. discord.js's own error is not kept
 * as `cause`: it holds the whole request body, attachment bytes included.
 */
export function toRequestError(operation: string, error: unknown): Error {
  if (error instanceof RateLimitedError || error instanceof DiscordRequestError) return error;
  const failure = classifyFailure(error);
  const status =
    failure?.kind === "rejected" || failure?.kind === "server_error" ? failure.status : undefined;
  const code = failure?.kind === "rejected" ? failure.code : undefined;
  const summary = describeError(error);
  const message =
    typeof summary.message === "string" ? summary.message : `HTTP ${status ?? "error"}`;
  return new DiscordRequestError(operation, status, code, message);
}
