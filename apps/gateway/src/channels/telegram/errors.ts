import { type ErrorCode, errorCodeOf, MediagateError } from "@mediagate/io";
import { GrammyError, HttpError } from "grammy";
import { RateLimitedError, type RetryVerdict } from "../../delivery/retry.js";
import { redactText } from "../../redact.js";

/**
 * What to do when a send may or may not have reached Telegram (the connection was lost after
 * the body was sent, a 5xx, a timeout after sending). The Bot API has no idempotency key, so
 * there is no way to ask. `at-most-once` does not resend: the step is `unconfirmed` and the
 * chat is told it may not have arrived. `at-least-once` resends: it may arrive twice.
 * docs/durability.md.
 */
export type AmbiguousSends = "at-most-once" | "at-least-once";

/**
 * One failed attempt of a Bot API call, with what this side saw of it: whether the request
 * body was never fully written (so Telegram cannot have acted on it), and the time bound when
 * it was that bound that ended the attempt. Internal: it wraps a grammY error, whose fetch
 * cause embeds the token; it is turned into {@link FailureFacts} before anything is logged.
 */
export class AttemptError extends MediagateError {
  override readonly name = "AttemptError";
  readonly code = "MG_TELEGRAM_ATTEMPT_FAILED";

  constructor(
    readonly error: unknown,
    /** This side saw the request start and its body never finish. */
    readonly knownNotSent: boolean,
    /** Set when the request's own time bound ended it. */
    readonly timeoutMs?: number | undefined,
    /** This side saw the whole body written (so even an odd failure may have arrived). */
    readonly bodyWritten = false,
  ) {
    super("telegram call attempt failed");
  }
}

/** Transport failures that happen before a request can be written: connect, DNS, TLS. */
const NotSentCodes =
  /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|EHOSTDOWN|ENETDOWN|ERR_TLS_.*|.*CERT.*)$/;

function errorCode(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return typeof error.code === "string" ? error.code : undefined;
}

const unwrap = (error: unknown): unknown => (error instanceof AttemptError ? error.error : error);

/**
 * Whether a failed call may have been acted on by Telegram: a 5xx answer, or a transport
 * failure after the request body was written (a reset, a timeout, a proxy's HTML error page).
 * `false` for a 4xx answer (429 included: refused, not done), a failure to connect, and a
 * request whose body this side saw was never fully written. Any other failure (an answer
 * grammY cannot read) may have arrived only if the body was seen written.
 */
export function mayHaveArrived(error: unknown): boolean {
  const original = unwrap(error);
  // An answer without a numeric error code is not Telegram's: treat it like a 5xx.
  if (original instanceof GrammyError) return !(original.error_code < 500);
  if (!(original instanceof HttpError)) return error instanceof AttemptError && error.bodyWritten;
  if (error instanceof AttemptError && error.knownNotSent) return false;
  const code = errorCode(original.error);
  return !(code !== undefined && NotSentCodes.test(code));
}

/**
 * The retry rule of a Bot API call (docs/media.md, docs/durability.md): 429 waits
 * `parameters.retry_after`; a failure that cannot have reached Telegram (connection refused,
 * DNS, a body never fully sent) is retried; one that may have reached it (5xx, a reset or
 * timeout after sending) is retried only under `at-least-once`; other 4xx are final.
 */
export function classifyTelegramError(
  error: unknown,
  ambiguousSends: AmbiguousSends = "at-most-once",
): RetryVerdict {
  const original = unwrap(error);
  if (original instanceof GrammyError && original.error_code === 429) {
    return { retry: true, afterSeconds: original.parameters.retry_after ?? 1 };
  }
  if (original instanceof GrammyError && original.error_code < 500) return { retry: false };
  if (!(original instanceof GrammyError) && !(original instanceof HttpError)) {
    return { retry: false };
  }
  if (!mayHaveArrived(error)) return { retry: true };
  return { retry: ambiguousSends === "at-least-once" };
}

/** Descriptions Telegram gives for a photo it cannot take as a photo (dimensions, size, format). */
const PhotoRejection = /PHOTO_|IMAGE_PROCESS_FAILED|dimensions|too big|too large|Entity Too Large/i;

/**
 * What Telegram answers when a chat is gone for the bot, so that no message can reach it: the
 * user blocked the bot or deleted their account, the bot was removed from the group, or the
 * chat no longer exists. Matched on code and description both: a 403 or 400 for any other
 * reason (a missing right, a bad parameter) says nothing about the chat itself.
 */
const UnreachableChat: readonly { readonly status: number; readonly description: RegExp }[] = [
  { status: 403, description: /^Forbidden: bot was blocked by the user\b/ },
  { status: 403, description: /^Forbidden: user is deactivated\b/ },
  {
    status: 403,
    description: /^Forbidden: bot was kicked from the (group|supergroup|channel) chat\b/,
  },
  { status: 400, description: /^Bad Request: chat not found\b/ },
];

/** Whether Telegram's answer (`status`, `description`) says the chat is unreachable for the bot. */
export function chatUnreachable(status: number | undefined, description: string): boolean {
  return UnreachableChat.some(
    (known) => known.status === status && known.description.test(description),
  );
}

/** Structured, token-free facts about a failed call, for logs and outcomes. */
export interface FailureFacts {
  readonly errorType: string;
  readonly status?: number | undefined;
  readonly description: string;
  readonly retryAfterSeconds?: number | undefined;
  /** The request's own time bound (ms) when that bound ended it. */
  readonly timeoutMs?: number | undefined;
  /** It may have gone through and is not resent (see {@link AmbiguousSends}). */
  readonly unconfirmed?: boolean | undefined;
  /** The caller's signal ended it; whatever was not sent is still to do. */
  readonly aborted?: boolean | undefined;
  /** The failure's own code when it was a mediagate error (a rate limit, a journal failure). */
  readonly code?: ErrorCode | undefined;
}

/**
 * What went wrong, without secrets. grammY's `HttpError` wraps the fetch error, whose
 * message names the request URL — and so the bot token; only a sanitized form of it is kept.
 */
export function failureFacts(error: unknown, token: string): FailureFacts {
  if (error instanceof AttemptError) {
    const facts = failureFacts(error.error, token);
    if (error.timeoutMs === undefined) return facts;
    return {
      ...facts,
      errorType: "TimeoutError",
      description: `no answer within ${error.timeoutMs} ms`,
      timeoutMs: error.timeoutMs,
    };
  }
  if (error instanceof RateLimitedError) {
    return {
      errorType: error.name,
      status: 429,
      description: error.message,
      retryAfterSeconds: error.retryAfterSeconds,
      code: error.code,
    };
  }
  if (error instanceof GrammyError) {
    return {
      errorType: error.name,
      status: error.error_code,
      description: redactText(String(error.description), [token]),
      retryAfterSeconds: error.parameters.retry_after,
    };
  }
  if (error instanceof HttpError) {
    const cause = error.error instanceof Error ? `: ${error.error.message}` : "";
    return { errorType: error.name, description: redactText(`${error.message}${cause}`, [token]) };
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const code = errorCodeOf(error);
  const facts = { errorType: "Error", description: redactText(message, [token]) };
  return code === undefined ? facts : { ...facts, code };
}

/**
 * A Telegram call that failed for good. Carries only sanitized context (no grammY error as
 * `cause`: its fetch error embeds the token in the URL).
 */
export class TelegramDeliveryError extends MediagateError {
  override readonly name = "TelegramDeliveryError";
  readonly code = "MG_TELEGRAM_CALL_FAILED";
  readonly platform = "telegram";

  constructor(
    readonly method: string,
    readonly facts: FailureFacts,
  ) {
    const status = facts.status === undefined ? "" : `${facts.status} `;
    super(`Telegram ${method} failed: ${status}${facts.description}`);
  }

  get status(): number | undefined {
    return this.facts.status;
  }

  get retryAfterSeconds(): number | undefined {
    return this.facts.retryAfterSeconds;
  }

  /** The retry policy gave up on a 429 (wait too long, or attempts used up). */
  get rateLimited(): boolean {
    return this.facts.errorType === "RateLimitedError";
  }

  /** It may have gone through; the policy said not to resend it (see {@link AmbiguousSends}). */
  get unconfirmed(): boolean {
    return this.facts.unconfirmed === true;
  }

  /** The caller aborted it before it was sent; it is still to do. */
  get aborted(): boolean {
    return this.facts.aborted === true;
  }

  /**
   * Telegram refused the message's markup (400 "can't parse entities"): the same message as
   * plain text goes through (docs/formatting.md, "When Telegram refuses the markup").
   */
  get markupRefused(): boolean {
    return this.facts.status === 400 && /can't parse entities/i.test(this.facts.description);
  }

  /**
   * Telegram said the chat is gone for the bot (blocked, deactivated, kicked, not found): no
   * message can reach it (see {@link chatUnreachable}).
   */
  get chatUnreachable(): boolean {
    return chatUnreachable(this.facts.status, this.facts.description);
  }

  /**
   * Telegram refused the image as a photo (dimensions, size, format): worth resending the
   * same bytes as a document.
   */
  get photoRejected(): boolean {
    const { status, description } = this.facts;
    return (status === 400 || status === 413) && PhotoRejection.test(description);
  }
}
