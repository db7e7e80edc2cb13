import { createHash, timingSafeEqual } from "node:crypto";
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import {
  formatListenAddress,
  MediagateError,
  RefusalTally,
  type Schedule,
  scheduleWithTimer,
  settledWithin,
} from "@mediagate/io";
import type { Update } from "grammy/types";
import type { Logger } from "pino";
import { Defaults } from "../../defaults.js";
import type { UpdateUnit } from "./albums.js";
import { failureFacts } from "./errors.js";
import type { HealthTracker } from "./health.js";
import type { WebhookSettings } from "./webhook-settings.js";

/** Header Telegram puts the webhook's `secret_token` in. */
const SecretHeader = "x-telegram-bot-api-secret-token";

/** What the receiver needs besides its settings. */
export interface WebhookDependencies {
  readonly token: string;
  readonly logger: Logger;
  readonly health: HealthTracker;
  /** Records one update (resolves once recorded, now or before, or found not for the core). */
  readonly handle: (unit: UpdateUnit) => Promise<void>;
  /** Makes what `handle` resolved for durable against a power cut, before the 200. */
  readonly flush: () => Promise<void>;
  /** The refusals' summary timer. Default real (unref'd) timers; tests fire it by hand. */
  readonly schedule?: Schedule | undefined;
}

/** The webhook's port could not be opened. */
export class TelegramWebhookListenError extends MediagateError {
  override readonly name = "TelegramWebhookListenError";
  readonly code = "MG_TELEGRAM_WEBHOOK_LISTEN_FAILED";
  readonly platform = "telegram";

  constructor(
    readonly listen: string,
    reason: string,
  ) {
    super(
      `Telegram webhook cannot listen on ${listen}: ${reason} (set telegram.webhook.listen to a free host:port)`,
    );
  }
}

/**
 * Requests refused for a missing or wrong secret (401), counted and logged as one summary line
 * per `Defaults.telegram.webhookRefusalSummaryMs` in which any came, never a line each
 * (@mediagate/io's `RefusalTally`, as the web console's refusals): whoever reaches the
 * webhook's URL needs no secret to be refused, and must not flood the log (and the web
 * console's ring of its last lines). A summary still owed is written at the receiver's stop.
 */
function refusalTally(logger: Logger, schedule: Schedule): RefusalTally<"secret"> {
  return new RefusalTally({
    kinds: ["secret"],
    write: ({ total, addresses, top, from }) =>
      logger.warn(
        { refused: total, addresses, top },
        `telegram webhook: refused ${total} request${total === 1 ? "" : "s"} without the right secret token (401) from ${from}`,
      ),
    intervalMs: Defaults.telegram.webhookRefusalSummaryMs,
    maxAddresses: Defaults.telegram.webhookRefusalMaxAddresses,
    topAddresses: Defaults.telegram.webhookRefusalTopAddresses,
    schedule,
  });
}

/** A body that is not an Update: the reason, answered with 400. */
class BadUpdateError extends Error {}
/** A body past `bodyMaxBytes`. */
class BodyTooLargeError extends Error {}

/**
 * Telegram's webhook side of the channel (docs/telegram-webhooks.md): a plain node:http server
 * on its own `listen` address that answers `POST <path of url>` only.
 *
 * The order of checks is the contract: a wrong or missing secret header → 401 (compared in
 * constant time over SHA-256 digests, so neither length nor content leaks; logged as one
 * summary per period, {@link refusalTally}); a body past
 * `bodyMaxBytes` → 413 (read no further); not JSON or not an Update → 400; while stopping →
 * 503. Nothing of those is recorded. Otherwise the update is recorded and flushed to disk
 * before the 200; when that fails the answer is 500 and Telegram sends it again later. A
 * redelivered update id is recorded once by the journal and answered 200 again.
 *
 * grammY's `webhookCallback` is not used: it needs a `Bot` running its own middleware (the
 * channel only uses `Api`), reads bodies without a bound, leaves a request whose JSON does
 * not parse unanswered, and its timeout answers while the durable write may still be running.
 */
export class WebhookReceiver {
  private server: Server | undefined;
  private stopping = false;
  private readonly inFlight = new Set<Promise<void>>();
  private readonly secretDigest: Buffer;
  private readonly refusals: RefusalTally<"secret">;

  constructor(
    private readonly deps: WebhookDependencies,
    private readonly settings: WebhookSettings,
  ) {
    this.secretDigest = digest(settings.secretToken);
    this.refusals = refusalTally(deps.logger, deps.schedule ?? scheduleWithTimer);
  }

  /** `host:port` the receiver listens on (the real port when 0 was asked for). */
  get address(): string {
    const address = this.server?.address() as AddressInfo | null | undefined;
    if (address === undefined || address === null) return "";
    return formatListenAddress({ host: address.address, port: address.port });
  }

  /** Opens the port; rejects with {@link TelegramWebhookListenError}. */
  async start(): Promise<void> {
    const server = createServer((request, response) => this.serve(request, response));
    server.requestTimeout = Defaults.telegram.webhookCallTimeoutMs;
    const listen = formatListenAddress({ host: this.settings.host, port: this.settings.port });
    try {
      server.listen(this.settings.port, this.settings.host);
      await once(server, "listening");
    } catch (error) {
      throw new TelegramWebhookListenError(
        listen,
        error instanceof Error ? error.message : String(error),
      );
    }
    this.server = server;
    this.deps.logger.info({ listen: this.address }, "telegram webhook listening");
  }

  /**
   * Stops accepting (new requests get 503 and the port closes), lets the updates being
   * recorded finish (bounded by `Defaults.telegram.stopWaitMs`), then drops the connections.
   */
  async stop(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.stopping = true;
    this.server = undefined;
    const closed = once(server, "close");
    server.close();
    server.closeIdleConnections();
    await settledWithin(Promise.allSettled([...this.inFlight]), Defaults.telegram.stopWaitMs);
    server.closeAllConnections();
    await closed;
    this.refusals.flush();
  }

  private serve(request: IncomingMessage, response: ServerResponse): void {
    const work = this.answer(request, response).catch((error: unknown) => {
      this.deps.logger.error(
        failureFacts(error, this.deps.token),
        "telegram webhook request failed",
      );
      reply(response, 500, "internal error");
    });
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  private async answer(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = (request.url ?? "/").split("?")[0];
    if (path !== this.settings.path) return reply(response, 404, "not found", request);
    if (request.method !== "POST") return reply(response, 405, "POST only", request);
    if (!this.secretMatches(request.headers[SecretHeader])) {
      this.refusals.count("secret", request.socket.remoteAddress ?? "unknown");
      return reply(response, 401, "unauthorized", request);
    }
    if (this.stopping) return reply(response, 503, "stopping", request);
    const arrivedAt = performance.now();
    let update: Update;
    try {
      update = parseUpdate(await readBody(request, this.settings.bodyMaxBytes));
    } catch (error) {
      if (error instanceof BodyTooLargeError) {
        this.deps.logger.warn(
          { limitBytes: this.settings.bodyMaxBytes },
          "telegram webhook body too large; refused (413)",
        );
        return reply(response, 413, "body too large", request);
      }
      if (error instanceof BadUpdateError) {
        this.deps.logger.warn({ reason: error.message }, "telegram webhook body is not an Update");
        return reply(response, 400, error.message);
      }
      throw error;
    }
    const readAt = performance.now();
    let recordedAt = readAt;
    try {
      await this.deps.handle([update]);
      recordedAt = performance.now();
      await this.deps.flush();
    } catch (error) {
      const facts = failureFacts(error, this.deps.token);
      this.deps.health.set(
        "retrying",
        `update ${update.update_id} not recorded: ${facts.description}`,
      );
      this.deps.logger.error(
        { updateId: update.update_id, ...facts },
        "telegram update could not be recorded; answered 500 so Telegram sends it again",
      );
      return reply(response, 500, "not recorded; send it again");
    }
    this.deps.health.ok();
    reply(response, 200, "");
    // Where a 200 waits (bench/README.md, "Webhook beside polling"): mostly on the sync.
    this.deps.logger.debug(
      {
        updateId: update.update_id,
        readMs: round(readAt - arrivedAt),
        recordMs: round(recordedAt - readAt),
        syncMs: round(performance.now() - recordedAt),
      },
      "telegram webhook update recorded and answered",
    );
  }

  private secretMatches(header: string | string[] | undefined): boolean {
    if (typeof header !== "string") return false;
    return timingSafeEqual(digest(header), this.secretDigest);
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}

function digest(text: string): Buffer {
  return createHash("sha256").update(text).digest();
}

/**
 * Answers and, when the body was not read (`request` given), closes the connection after
 * the answer so an unread (perhaps huge) body is not waited for.
 */
function reply(
  response: ServerResponse,
  status: number,
  text: string,
  request?: IncomingMessage,
): void {
  if (response.headersSent || response.destroyed) return;
  const unread = request !== undefined && !request.complete;
  response.writeHead(status, {
    "content-type": "text/plain; charset=utf-8",
    ...(unread ? { connection: "close" } : {}),
  });
  response.end(text === "" ? undefined : `${text}\n`);
}

async function readBody(request: IncomingMessage, maxBytes: number): Promise<Buffer> {
  const declared = Number(request.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) throw new BodyTooLargeError();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    const bytes = chunk as Buffer;
    size += bytes.length;
    if (size > maxBytes) throw new BodyTooLargeError();
    chunks.push(bytes);
  }
  return Buffer.concat(chunks);
}

/** The Update in `body`: a JSON object with a whole, non-negative `update_id`. */
function parseUpdate(body: Buffer): Update {
  let value: unknown;
  try {
    value = JSON.parse(body.toString("utf8"));
  } catch {
    throw new BadUpdateError("the body is not JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new BadUpdateError("the body is not a JSON object");
  }
  const id = (value as { update_id?: unknown }).update_id;
  if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 0) {
    throw new BadUpdateError("the body has no update_id");
  }
  return value as Update;
}
