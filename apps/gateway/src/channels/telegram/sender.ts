import type { Logger } from "pino";
import { type RetryOptions, withRetry } from "../../delivery/retry.js";
import { classifyTelegramError, failureFacts, TelegramDeliveryError } from "./errors.js";

/**
 * Runs Bot API calls with the retry policy and token-free structured logs. Every failure
 * that leaves here is a {@link TelegramDeliveryError}; grammY's own errors (whose fetch
 * cause embeds the token in the URL) never escape and are never logged as objects.
 */
export class TelegramCaller {
  constructor(
    private readonly token: string,
    private readonly logger: Logger,
    private readonly retry: RetryOptions,
  ) {}

  /** Calls `request` (a fresh request per attempt) for `method`, retrying as docs/media.md says. */
  async call<T>(
    method: string,
    chatId: string,
    request: (attempt: number) => Promise<T>,
    signal?: AbortSignal,
  ): Promise<T> {
    try {
      return await withRetry(request, {
        classify: classifyTelegramError,
        options: this.retry,
        signal,
        onRetry: (event) => {
          this.logger.warn(
            {
              method,
              chatId,
              attempt: event.attempt,
              delayMs: event.delayMs,
              retryAfterSeconds: event.retryAfterSeconds,
              ...failureFacts(event.error, this.token),
            },
            "telegram call failed; retrying",
          );
        },
      });
    } catch (error) {
      const facts = failureFacts(error, this.token);
      this.logger.warn({ method, chatId, ...facts }, "telegram call failed");
      throw new TelegramDeliveryError(method, facts);
    }
  }
}
