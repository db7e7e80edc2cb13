import { GrammyError, HttpError } from "grammy";
import { RateLimitedError, type RetryVerdict } from "../../delivery/retry.js";
import { redactText } from "../../redact.js";

/**
 * docs/media.md for the Bot API: 429 waits `parameters.retry_after`; 5xx and connection failures
 * (grammY `HttpError`) are retried; other 4xx are final. A request that timed out or was
 * aborted after it was sent is not retried: the Bot API has no idempotency key, so a retry
 * could post the message twice.
 */
export function classifyTelegramError(error: unknown): RetryVerdict {
  if (error instanceof GrammyError) {
    if (error.error_code === 429) {
      return { retry: true, afterSeconds: error.parameters.retry_after ?? 1 };
    }
    return error.error_code >= 500 ? { retry: true } : { retry: false };
  }
  if (error instanceof HttpError) return { retry: !isTimeoutOrAbort(error.error) };
  return { retry: false };
}

function isTimeoutOrAbort(cause: unknown): boolean {
  if (!(cause instanceof Error)) return false;
  return cause.name === "AbortError" || /timed out/i.test(cause.message);
}

/** Descriptions Telegram gives for a photo it cannot take as a photo (dimensions, size, format). */
const PhotoRejection = /PHOTO_|IMAGE_PROCESS_FAILED|dimensions|too big|too large|Entity Too Large/i;

/** Structured, token-free facts about a failed call, for logs and outcomes. */
export interface FailureFacts {
  readonly errorType: string;
  readonly status?: number | undefined;
  readonly description: string;
  readonly retryAfterSeconds?: number | undefined;
}

/**
 * What went wrong, without secrets. grammY's `HttpError` wraps the fetch error, whose
 * message names the request URL — and so the bot token; only a sanitized form of it is kept.
 */
export function failureFacts(error: unknown, token: string): FailureFacts {
  if (error instanceof RateLimitedError) {
    return {
      errorType: error.name,
      status: 429,
      description: error.message,
      retryAfterSeconds: error.retryAfterSeconds,
    };
  }
  if (error instanceof GrammyError) {
    return {
      errorType: error.name,
      status: error.error_code,
      description: redactText(error.description, [token]),
      retryAfterSeconds: error.parameters.retry_after,
    };
  }
  if (error instanceof HttpError) {
    const cause = error.error instanceof Error ? `: ${error.error.message}` : "";
    return { errorType: error.name, description: redactText(`${error.message}${cause}`, [token]) };
  }
  const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return { errorType: "Error", description: redactText(message, [token]) };
}

/**
 * A Telegram call that failed for good. Carries only sanitized context (no grammY error as
 * `cause`: its fetch error embeds the token in the URL).
 */
export class TelegramDeliveryError extends Error {
  override readonly name = "TelegramDeliveryError";
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

  /**
   * Telegram refused the image as a photo (dimensions, size, format): worth resending the
   * same bytes as a document.
   */
  get photoRejected(): boolean {
    const { status, description } = this.facts;
    return (status === 400 || status === 413) && PhotoRejection.test(description);
  }
}
