import type { Update } from "grammy/types";
import { type ApiAnswer, fail, ok } from "./protocol.js";
import type { UpdateQueue } from "./update-queue.js";

/** How the fake's webhook delivery retries, as a test drives it. */
export interface WebhookDeliveryOptions {
  /**
   * The wait before delivering an update again after a failed attempt (`attempt` from 1).
   * Default: 1 s doubling to 60 s, like Telegram's growing retry intervals.
   */
  readonly retryDelayMs?: (attempt: number) => number;
  /** An attempt unanswered this long counts as failed (default 10 s). */
  readonly timeoutMs?: number;
  /**
   * Deliver as Telegram does: the updates of one chat one after another, those of different
   * chats at once, up to the webhook's `max_connections` requests open. Default `false`: one
   * update at a time, whatever its chat, which keeps tests deterministic.
   */
  readonly parallel?: boolean;
}

/** One POST the fake made to the webhook. */
export interface WebhookAttempt {
  readonly updateId: number;
  /** HTTP status answered; 0 when the request failed (connection refused, reset, timeout). */
  readonly status: number;
  /** Why it failed, when it did. */
  readonly error?: string;
}

const SecretPattern = /^[A-Za-z0-9_-]{1,256}$/;

/**
 * Telegram's webhook side: `setWebhook`, `deleteWebhook` and `getWebhookInfo`, and, while a
 * webhook is set, the delivery of queued updates by POSTing each (JSON, in update order, one
 * at a time) to its URL with `X-Telegram-Bot-Api-Secret-Token`. A 2xx confirms the update;
 * anything else (or no answer within `timeoutMs`) is recorded as the webhook's last error
 * and the same update is posted again after `retryDelayMs(attempt)` (or at once on
 * {@link retryNow}). Real Telegram may send up to `max_connections` updates at once (those of
 * one chat in order); the fake sends one at a time, which keeps tests deterministic, unless
 * `parallel` asks for Telegram's way.
 */
export class WebhookDelivery {
  private url = "";
  private secretToken: string | undefined;
  private maxConnections = 40;
  private allowedUpdates: unknown;
  private lastError: { date: number; message: string } | undefined;
  private running: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private kicked = false;
  private customCertificate = false;
  /** Every POST made to the webhook, in order. */
  readonly attempts: WebhookAttempt[] = [];
  private readonly retryDelayMs: (attempt: number) => number;
  private readonly timeoutMs: number;
  private readonly parallel: boolean;
  /** `parallel`: the chats with an update being delivered (or waiting to be retried). */
  private readonly busyChats = new Set<string>();
  /** `parallel`: the deliveries under way. */
  private readonly deliveries = new Set<Promise<void>>();
  /** `parallel`: ends the retry waits now. */
  private readonly wakeUps = new Set<() => void>();

  constructor(
    private readonly queue: UpdateQueue,
    options: WebhookDeliveryOptions = {},
  ) {
    this.retryDelayMs =
      options.retryDelayMs ?? ((attempt) => Math.min(60_000, 1000 * 2 ** (attempt - 1)));
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.parallel = options.parallel ?? false;
    queue.onPush(() => this.kick());
  }

  /** Whether a webhook is set (getUpdates then answers 409). */
  get active(): boolean {
    return this.url !== "";
  }

  /** The webhook's URL and secret as set (for tests). */
  get current(): { url: string; secretToken: string | undefined; maxConnections: number } {
    return { url: this.url, secretToken: this.secretToken, maxConnections: this.maxConnections };
  }

  /** `certificate`: a public certificate was uploaded with the call (a self-signed setup). */
  setWebhook(params: Record<string, unknown>, certificate = false): ApiAnswer {
    const url = typeof params.url === "string" ? params.url : "";
    if (url === "") return this.deleteWebhook(params);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return fail(
        400,
        "Bad Request: bad webhook: Failed to resolve host: Name or service not known",
      );
    }
    // The fake accepts http to this host: tests have no certificate. Telegram wants https.
    if (parsed.protocol !== "https:" && parsed.hostname !== "127.0.0.1") {
      return fail(400, "Bad Request: bad webhook: HTTPS url must be provided for webhook");
    }
    const secret = params.secret_token;
    if (secret !== undefined && (typeof secret !== "string" || !SecretPattern.test(secret))) {
      return fail(400, "Bad Request: secret token contains unallowed characters");
    }
    const max = params.max_connections === undefined ? 40 : Number(params.max_connections);
    if (!Number.isInteger(max) || max < 1 || max > 100) {
      return fail(400, "Bad Request: bad webhook: max_connections must be between 1 and 100");
    }
    if (params.drop_pending_updates === true || params.drop_pending_updates === "true") {
      this.queue.dropAll();
    }
    this.url = url;
    this.secretToken = secret;
    this.maxConnections = max;
    this.allowedUpdates = params.allowed_updates;
    this.customCertificate = certificate;
    this.lastError = undefined;
    this.kick();
    return ok(true);
  }

  deleteWebhook(params: Record<string, unknown>): ApiAnswer {
    if (params.drop_pending_updates === true || params.drop_pending_updates === "true") {
      this.queue.dropAll();
    }
    this.url = "";
    this.secretToken = undefined;
    this.lastError = undefined;
    this.wakeUp?.();
    return ok(true);
  }

  getWebhookInfo(): ApiAnswer {
    return ok({
      url: this.url,
      has_custom_certificate: this.active && this.customCertificate,
      pending_update_count: this.queue.size,
      ...(this.active ? { max_connections: this.maxConnections } : {}),
      ...(this.active && this.allowedUpdates !== undefined
        ? { allowed_updates: this.allowedUpdates }
        : {}),
      ...(this.lastError === undefined
        ? {}
        : { last_error_date: this.lastError.date, last_error_message: this.lastError.message }),
    });
  }

  /** Ends a retry wait now: the failed update is posted again at once. */
  retryNow(): void {
    this.wakeUp?.();
    for (const wake of [...this.wakeUps]) wake();
  }

  /**
   * Posts `update` once more, outside the queue, as Telegram does when it did not see the
   * answer to an earlier delivery; resolves with the status (0: no answer).
   */
  async deliverAgain(update: Update): Promise<number> {
    return (await this.post(update)).status;
  }

  /** Resolves once the delivery loop is idle (nothing queued, or no webhook). */
  async idle(): Promise<void> {
    while (this.running !== undefined || this.deliveries.size > 0) {
      await this.running;
      await Promise.all([...this.deliveries]);
    }
  }

  /** Stops delivering (server shutdown). */
  close(): void {
    this.url = "";
    this.wakeUp?.();
    for (const wake of [...this.wakeUps]) wake();
  }

  private kick(): void {
    if (this.parallel) {
      for (const wake of [...this.wakeUps]) wake();
      this.startDeliveries();
      return;
    }
    this.wakeUp?.();
    // A push while the loop winds down is seen by the loop that starts after it.
    this.kicked = this.running !== undefined;
    if (this.running !== undefined || !this.active) return;
    this.running = this.loop().finally(() => {
      this.running = undefined;
      if (this.kicked) this.kick();
    });
  }

  private async loop(): Promise<void> {
    let failures = 0;
    for (;;) {
      const update = this.queue.first();
      if (!this.active || update === undefined) return;
      const attempt = await this.post(update);
      if (attempt.status >= 200 && attempt.status < 300) {
        this.queue.remove(update.update_id);
        failures = 0;
        continue;
      }
      failures++;
      this.lastError = {
        date: Math.floor(Date.now() / 1000),
        message: attempt.error ?? `Wrong response from the webhook: ${attempt.status}`,
      };
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.retryDelayMs(failures));
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        this.wakeUp = done;
      });
      this.wakeUp = undefined;
    }
  }

  /** `parallel`: starts delivering the first queued update of every idle chat, within `max_connections`. */
  private startDeliveries(): void {
    if (!this.active) return;
    for (const update of this.queue.pending()) {
      if (this.deliveries.size >= this.maxConnections) return;
      const chat = chatOf(update);
      if (this.busyChats.has(chat)) continue;
      this.busyChats.add(chat);
      const delivery = this.deliverInOrder(update).finally(() => {
        this.busyChats.delete(chat);
        this.deliveries.delete(delivery);
        this.startDeliveries();
      });
      this.deliveries.add(delivery);
    }
  }

  /** `parallel`: posts `update` until it is answered 2xx (or the webhook goes). */
  private async deliverInOrder(update: Update): Promise<void> {
    for (let failures = 1; this.active; failures++) {
      const attempt = await this.post(update);
      if (attempt.status >= 200 && attempt.status < 300) {
        this.queue.remove(update.update_id);
        return;
      }
      this.lastError = {
        date: Math.floor(Date.now() / 1000),
        message: attempt.error ?? `Wrong response from the webhook: ${attempt.status}`,
      };
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.wakeUps.delete(done);
          resolve();
        };
        const timer = setTimeout(done, this.retryDelayMs(failures));
        this.wakeUps.add(done);
      });
    }
  }

  private async post(update: Update): Promise<WebhookAttempt> {
    let attempt: WebhookAttempt;
    try {
      const response = await fetch(this.url, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          ...(this.secretToken === undefined
            ? {}
            : { "x-telegram-bot-api-secret-token": this.secretToken }),
        },
        body: JSON.stringify(update),
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      await response.arrayBuffer().catch(() => undefined);
      attempt = { updateId: update.update_id, status: response.status };
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      attempt = {
        updateId: update.update_id,
        status: 0,
        error: reason.includes("timeout")
          ? "Read timeout expired"
          : `Connection refused: ${reason}`,
      };
    }
    this.attempts.push(attempt);
    return attempt;
  }
}

/** The chat an update belongs to: Telegram delivers one chat's updates one after another. */
function chatOf(update: Update): string {
  const chat =
    update.message?.chat.id ??
    update.channel_post?.chat.id ??
    update.callback_query?.message?.chat.id ??
    update.callback_query?.from.id;
  return chat === undefined ? `update:${update.update_id}` : String(chat);
}
