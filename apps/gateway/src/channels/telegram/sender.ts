import { combinedSignal } from "@mediagate/io";
import type { Logger } from "pino";
import { type ResolvedRetryOptions, withRetry } from "../../delivery/retry.js";
import {
  type AmbiguousSends,
  AttemptError,
  classifyTelegramError,
  type FailureFacts,
  failureFacts,
  mayHaveArrived,
  TelegramDeliveryError,
} from "./errors.js";
import { RequestProgress, trackRequest } from "./request-tracking.js";

/** How long one Bot API request may take (docs/durability.md). */
export interface RequestTimeouts {
  /**
   * Every request's allowance before its upload is counted. Default:
   * `Defaults.telegram.requestTimeoutBaseMs`.
   */
  readonly requestTimeoutBaseMs: number;
  /**
   * The slowest upload still waited for: a request may also take its size divided by this.
   * Default: `Defaults.telegram.minUploadBytesPerSecond`.
   */
  readonly minUploadBytesPerSecond: number;
}

/** What {@link TelegramCaller} is built with. */
export interface CallerSettings extends RequestTimeouts {
  readonly retry: ResolvedRetryOptions;
  readonly ambiguousSends: AmbiguousSends;
}

/** Options of one {@link TelegramCaller.call}. */
export interface CallOptions {
  /** The caller's signal: aborting it ends the request and any wait between attempts. */
  readonly signal?: AbortSignal | undefined;
  /** Bytes the request uploads; its time bound grows with them. */
  readonly bytes?: number | undefined;
  /**
   * Repeating the call is harmless (getMe, deleteWebhook): a failure that may have reached
   * Telegram is retried whatever the ambiguity policy says.
   */
  readonly idempotent?: boolean | undefined;
}

/** The time bound of a request uploading `bytes`: base + bytes / minimum throughput. */
export function requestTimeoutMs(bytes: number, timeouts: RequestTimeouts): number {
  return (
    timeouts.requestTimeoutBaseMs +
    Math.ceil((Math.max(0, bytes) * 1000) / timeouts.minUploadBytesPerSecond)
  );
}

/**
 * Runs Bot API calls with the retry policy, a time bound per request sized by its upload,
 * the ambiguity policy, and token-free structured logs. Every failure that leaves here is a
 * {@link TelegramDeliveryError} saying whether the call may have gone through (`unconfirmed`)
 * or was stopped by the caller before it could (`aborted`); grammY's own errors (whose fetch
 * cause embeds the token in the URL) never escape and are never logged as objects.
 */
export class TelegramCaller {
  constructor(
    private readonly token: string,
    private readonly logger: Logger,
    private readonly settings: CallerSettings,
  ) {}

  /** The policy for sends whose outcome is unknown. */
  get ambiguousSends(): AmbiguousSends {
    return this.settings.ambiguousSends;
  }

  /**
   * Calls `request` for `method`, retrying as docs/media.md and docs/durability.md say. Each
   * attempt gets a fresh signal that ends at the request's time bound or when the caller's
   * signal aborts; `request` must pass it to grammY and build a fresh request (fresh file
   * stream) each time.
   */
  async call<T>(
    method: string,
    chatId: string,
    request: (signal: AbortSignal) => Promise<T>,
    options: CallOptions = {},
  ): Promise<T> {
    const { signal } = options;
    const timeoutMs = requestTimeoutMs(options.bytes ?? 0, this.settings);
    const policy: AmbiguousSends = options.idempotent
      ? "at-least-once"
      : this.settings.ambiguousSends;
    let last: AttemptError | undefined;
    const attempt = async (): Promise<T> => {
      const bound = AbortSignal.timeout(timeoutMs);
      // Not `AbortSignal.any`: `signal` is often the outbox's for the process's life, and on
      // Node 20 `any` records every signal it makes in it (`combinedSignal`).
      const combined = signal === undefined ? undefined : combinedSignal([signal, bound]);
      const progress = new RequestProgress();
      try {
        return await trackRequest(progress, () => request(combined?.signal ?? bound));
      } catch (error) {
        const timedOut = bound.aborted && signal?.aborted !== true;
        last = new AttemptError(
          error,
          progress.knownNotSent,
          timedOut ? timeoutMs : undefined,
          progress.bodyWritten,
        );
        throw last;
      } finally {
        combined?.release();
      }
    };
    try {
      return await withRetry(attempt, {
        classify: (error) => classifyTelegramError(error, policy),
        options: this.settings.retry,
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
      const aborted = signal?.aborted === true;
      // After an abort the last attempt tells whether the request may be in Telegram's hands;
      // at-least-once leaves it to be sent again later, at-most-once records it as unconfirmed.
      const unconfirmed =
        last !== undefined && mayHaveArrived(last) && (!aborted || policy === "at-most-once");
      const facts: FailureFacts = {
        ...failureFacts(unconfirmed ? last : error, this.token),
        ...(unconfirmed ? { unconfirmed: true } : aborted ? { aborted: true } : {}),
      };
      if (facts.unconfirmed === true) {
        this.logger.warn(
          { method, chatId, ambiguousSends: policy, ...facts },
          "telegram call may have gone through; not sending it again",
        );
      } else {
        this.logger.warn({ method, chatId, ...facts }, "telegram call failed");
      }
      throw new TelegramDeliveryError(method, facts);
    }
  }
}
