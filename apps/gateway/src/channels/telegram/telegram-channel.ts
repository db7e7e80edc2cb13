import { telegramLimits, type UploadLimits } from "@mediagate/media";
import { Bot, type Context } from "grammy";
import type { Logger } from "pino";
import { type RetryOptions, resolveRetryOptions } from "../../delivery/retry.js";
import { splitText } from "../../delivery/split-text.js";
import { redactText } from "../../redact.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChannelStartOptions,
  ChatTarget,
  DeliverOptions,
  DeliveryReport,
  InboundMessage,
  OutboundReply,
} from "../types.js";
import { deliverReply } from "./deliver-reply.js";
import { TelegramTextLimits } from "./delivery-steps.js";
import { failureFacts, TelegramDeliveryError } from "./errors.js";
import { toInboundMessage } from "./inbound.js";
import { grammySignal, type MediaSendContext } from "./send-media.js";
import { TelegramCaller } from "./sender.js";
import { OutgoingTarget } from "./target.js";

/** Options of {@link TelegramChannel}. */
export interface TelegramChannelOptions {
  /** The bot token (BotFather). Never logged. */
  readonly token: string;
  /** Bot API server root without trailing slash; default `https://api.telegram.org`. */
  readonly apiRoot?: string | undefined;
  /** The profile this bot serves; stamped on every inbound message. */
  readonly profile: string;
  readonly logger: Logger;
  /** Upload caps; raise them for a local Bot API server (default 10 MB photo, 50 MB other). */
  readonly limits?:
    | { readonly photoBytes?: number | undefined; readonly otherBytes?: number | undefined }
    | undefined;
  /** Retry policy (docs/media.md); `maxRetryAfterSeconds` defaults to 60. */
  readonly retry?: RetryOptions | undefined;
  /**
   * Drop updates that queued up while the gateway was down. Default `false`: Telegram keeps
   * them for 24 h and a restart should not lose what people wrote meanwhile.
   */
  readonly dropPendingUpdates?: boolean | undefined;
  /**
   * Bound on one Bot API request (grammY's own default is 500 s). A stuck upload must not
   * hold its session and a global concurrency slot for minutes; a request that times out
   * after it was sent is not retried (the Bot API has no idempotency key). It must stay above
   * the 30 s long-poll timeout.
   */
  readonly requestTimeoutSeconds?: number | undefined;
}

export const TelegramChannelDefaults = {
  apiRoot: "https://api.telegram.org",
  dropPendingUpdates: false,
  requestTimeoutSeconds: 120,
} as const satisfies Partial<TelegramChannelOptions>;

/** A typing indicator that takes longer than this is not worth waiting for. */
const ActivityTimeoutMs = 10_000;

/** Telegram could not be reached or refused the bot at start-up. Token-free. */
export class TelegramStartError extends Error {
  override readonly name = "TelegramStartError";
  readonly platform = "telegram";

  readonly status: number | undefined;

  constructor(
    readonly description: string,
    status?: number,
  ) {
    const hint = status === 401 ? " (the bot token was refused)" : "";
    super(
      `Telegram channel failed to start: ${status === undefined ? "" : `${status} `}${description}${hint}`,
    );
    this.status = status;
  }
}

/**
 * The Telegram {@link ChannelAdapter} (grammY long polling). Receives text messages of
 * private chats, groups, forum topics and channels; delivers text split at 4096 UTF-16 units
 * and media by kind with retries, photo albums and photo→document fallback (docs/media.md).
 */
export class TelegramChannel implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly limits: UploadLimits;
  private readonly bot: Bot;
  private readonly token: string;
  readonly profile: string;
  private readonly logger: Logger;
  private readonly caller: TelegramCaller;
  private readonly dropPendingUpdates: boolean;
  private polling: Promise<void> | undefined;
  private onMessage: ((message: InboundMessage) => Promise<void>) | undefined;

  constructor(options: TelegramChannelOptions) {
    if (typeof options.token !== "string" || options.token.trim() === "") {
      throw new TypeError(
        "TelegramChannel needs a bot token: set TELEGRAM_BOT_TOKEN or the profile's telegram token",
      );
    }
    if (options.logger === undefined) throw new TypeError("TelegramChannel needs a pino logger");
    const apiRoot = (options.apiRoot ?? TelegramChannelDefaults.apiRoot).replace(/\/+$/, "");
    this.token = options.token.trim();
    this.profile = options.profile;
    this.logger = options.logger.child({ channel: "telegram" });
    this.limits = telegramLimits(options.limits ?? {});
    this.caller = new TelegramCaller(this.token, this.logger, resolveRetryOptions(options.retry));
    this.dropPendingUpdates =
      options.dropPendingUpdates ?? TelegramChannelDefaults.dropPendingUpdates;
    const timeoutSeconds =
      options.requestTimeoutSeconds ?? TelegramChannelDefaults.requestTimeoutSeconds;
    this.bot = new Bot(this.token, { client: { apiRoot, timeoutSeconds } });
    this.bot.on(["message:text", "channel_post:text"], (ctx) => this.receive(ctx));
    this.bot.catch((error) => {
      this.logger.error(failureFacts(error.error, this.token), "telegram update handling failed");
    });
  }

  /**
   * Starts long polling; resolves once the bot is authorized (getMe) and polling. Only text
   * messages and channel posts are requested. A rejection is a token-free
   * {@link TelegramStartError}.
   */
  async start({ onMessage }: ChannelStartOptions): Promise<void> {
    if (this.polling !== undefined) return;
    this.onMessage = onMessage;
    // getMe through our own retry policy: grammY's init retries network errors forever, and a
    // failed init inside bot.start() leaves its deleteWebhook retry loop running unabortable.
    if (!this.bot.isInited()) {
      try {
        this.bot.botInfo = await this.caller.call("getMe", "-", () => this.bot.api.getMe());
      } catch (error) {
        const facts =
          error instanceof TelegramDeliveryError ? error.facts : failureFacts(error, this.token);
        throw new TelegramStartError(facts.description, facts.status);
      }
    }
    await new Promise<void>((resolve, reject) => {
      let started = false;
      this.polling = this.bot
        .start({
          drop_pending_updates: this.dropPendingUpdates,
          allowed_updates: ["message", "channel_post"],
          onStart: (me) => {
            started = true;
            this.logger.info({ bot: me.username }, "telegram long polling started");
            resolve();
          },
        })
        .catch((error: unknown) => {
          const facts = failureFacts(error, this.token);
          if (!started) {
            this.polling = undefined;
            reject(new TelegramStartError(facts.description, facts.status));
            return;
          }
          this.logger.error(facts, "telegram long polling stopped with an error");
        });
    });
  }

  /** Stops polling (confirming handled updates to Telegram) and waits for the loop to end. */
  async stop(): Promise<void> {
    const polling = this.polling;
    if (polling === undefined) return;
    this.polling = undefined;
    try {
      if (this.bot.isRunning()) await this.bot.stop();
    } catch (error) {
      this.logger.warn(failureFacts(error, this.token), "telegram stop could not confirm updates");
    }
    await polling;
  }

  /**
   * Sends `text` as messages split at 4096 UTF-16 units (newline, then space; code fences
   * closed and reopened). Plain text, no parse mode: agent output is not trusted markup.
   * Rejects with a token-free {@link TelegramDeliveryError} when a chunk fails for good.
   */
  async sendText(target: ChatTarget, text: string, signal?: AbortSignal): Promise<void> {
    await this.sendChunks(new OutgoingTarget(target), text, signal);
  }

  /**
   * Sends the reply text and every ready item (see {@link deliverReply} for the order
   * and where the text goes). Never throws: each ready item gets an outcome, in plan order;
   * a text that cannot be sent is logged. Descriptors stay open: the caller disposes the plan.
   */
  health(): ChannelHealth {
    return {
      platform: "telegram",
      profile: this.profile,
      state: this.polling === undefined ? "starting" : "up",
      sinceMs: Date.now(),
    };
  }

  async deliver(reply: OutboundReply, options: DeliverOptions = {}): Promise<DeliveryReport> {
    const signal = options.signal;
    const items = reply.plan.ready();
    const target = new OutgoingTarget(reply.target);
    const ctx: MediaSendContext = {
      api: this.bot.api,
      caller: this.caller,
      target,
      logger: this.logger.child({ sessionKey: reply.sessionKey, chatId: target.chatId }),
      token: this.token,
      signal,
    };
    const report = await deliverReply(ctx, reply.text, items, (text) =>
      this.sendTextSafely(target, text, signal),
    );
    for (const outcome of report)
      this.logger.info({ sessionKey: reply.sessionKey, ...outcome }, "media delivery");
    return { outcomes: report };
  }

  /** Shows "typing…" in the chat (and topic). Best effort: one try, never throws. */
  async showActivity(target: ChatTarget, _signal?: AbortSignal): Promise<void> {
    const out = new OutgoingTarget(target);
    try {
      await this.bot.api.sendChatAction(
        out.chat,
        "typing",
        out.actionOptions(),
        grammySignal(AbortSignal.timeout(ActivityTimeoutMs)),
      );
    } catch (error) {
      this.logger.debug(
        { chatId: out.chatId, ...failureFacts(error, this.token) },
        "typing indicator failed",
      );
    }
  }

  private receive(ctx: Context): void {
    const message = ctx.message ?? ctx.channelPost;
    if (message === undefined || this.onMessage === undefined) return;
    const inbound = toInboundMessage(message, {
      profile: this.profile,
      botUsername: ctx.me.username,
      updateId: ctx.update.update_id,
    });
    if (inbound === undefined) return;
    try {
      void this.onMessage(inbound);
    } catch (error) {
      this.logger.error(
        { chatId: inbound.chatId, ...failureFacts(error, this.token) },
        "message handler threw",
      );
    }
  }

  private async sendChunks(
    target: OutgoingTarget,
    text: string,
    signal?: AbortSignal,
  ): Promise<void> {
    const chunks = splitText(text, { maxLength: TelegramTextLimits.messageLength });
    for (const chunk of chunks) {
      await this.caller.call(
        "sendMessage",
        target.chatId,
        () => this.bot.api.sendMessage(target.chat, chunk, target.options(), grammySignal(signal)),
        signal,
      );
      target.sent();
    }
  }

  private async sendTextSafely(
    target: OutgoingTarget,
    text: string,
    signal?: AbortSignal,
  ): Promise<void> {
    try {
      await this.sendChunks(target, text, signal);
    } catch (error) {
      const description =
        error instanceof TelegramDeliveryError
          ? error.message
          : redactText(error instanceof Error ? error.message : String(error), [this.token]);
      this.logger.error({ chatId: target.chatId, error: description }, "reply text not delivered");
    }
  }
}
