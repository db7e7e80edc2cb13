import { once } from "node:events";
import { discordLimits, type UploadLimits } from "@mediagate/media";
import { type Client, Events, type Message, type REST } from "discord.js";
import type { Logger } from "pino";
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
import { createDeliveryRest, createGatewayClient } from "./client.js";
import { describeError, toRequestError } from "./errors.js";
import { toInboundMessage } from "./inbound.js";
import { flatLimits, uploadLimitFor } from "./limits.js";
import { DiscordOutbox, type DiscordRetryOptions } from "./outbox.js";

/** Constructor options of {@link DiscordChannel}. */
export interface DiscordChannelOptions {
  /** The bot token. Never logged. */
  readonly token: string;
  /** REST root without version; default `https://discord.com/api` (`DISCORD_API_ROOT`). */
  readonly apiRoot?: string | undefined;
  /**
   * Websocket URL used instead of the one `GET /gateway/bot` answers (`DISCORD_GATEWAY_URL`);
   * RESUME still goes to READY's `resume_gateway_url`.
   */
  readonly gatewayUrl?: string | undefined;
  readonly profile: string;
  readonly logger: Logger;
  /** Guild channels answered without a mention (their threads too). */
  readonly respondIn?: { readonly channelIds?: readonly string[] | undefined } | undefined;
  /** `maxBytes` replaces the upload limit everywhere (see `uploadLimitFor`). */
  readonly limits?: { readonly maxBytes?: number | undefined } | undefined;
  readonly retry?: DiscordRetryOptions | undefined;
  /** Per-request timeout of discord.js's REST; default 15 s. */
  readonly requestTimeoutMs?: number | undefined;
}

/** Defaults of {@link DiscordChannelOptions}. */
export const DiscordChannelDefaults = {
  apiRoot: "https://discord.com/api",
  requestTimeoutMs: 15_000,
} as const;

/**
 * Discord through discord.js (docs/media.md): guild channels (when mentioned or configured),
 * threads (their own sessions) and DMs in; replies as 2000-character chunks with balanced code
 * fences and attachments (10 per message, the chat's upload limit), every create carrying an
 * enforced nonce; typing as the activity indicator.
 */
export class DiscordChannel implements ChannelAdapter {
  readonly platform = "discord" as const;
  /**
   * Limits for planning when the chat is not known: the configured `maxBytes`, else the
   * largest limit of the guilds the bot is in (10 MiB before `start`). A file over the limit
   * of the actual chat is still refused at delivery; plan with {@link limitsFor} to get the
   * exact too-large outcome up front.
   */
  readonly limits: UploadLimits;
  readonly #token: string;
  readonly #client: Client;
  readonly #rest: REST;
  readonly #outbox: DiscordOutbox;
  readonly #log: Logger;
  readonly profile: string;
  readonly #channelIds: ReadonlySet<string>;
  readonly #configuredMaxBytes: number | undefined;
  readonly #answeredThreads = new Set<string>();
  #started = false;

  constructor(options: DiscordChannelOptions) {
    if (typeof options.token !== "string" || options.token.trim() === "") {
      throw new TypeError(
        "DiscordChannel needs a bot token: set discord.token or DISCORD_BOT_TOKEN",
      );
    }
    const connection = {
      token: options.token,
      apiRoot: options.apiRoot ?? DiscordChannelDefaults.apiRoot,
      gatewayUrl: options.gatewayUrl,
      requestTimeoutMs: options.requestTimeoutMs ?? DiscordChannelDefaults.requestTimeoutMs,
    };
    this.profile = options.profile;
    this.#log = options.logger.child({ channel: "discord", profile: options.profile });
    this.#channelIds = new Set(options.respondIn?.channelIds ?? []);
    const maxBytes = options.limits?.maxBytes;
    if (maxBytes !== undefined && (!Number.isSafeInteger(maxBytes) || maxBytes <= 0)) {
      throw new RangeError(
        `DiscordChannel limits.maxBytes must be a positive integer, got ${maxBytes}`,
      );
    }
    this.#configuredMaxBytes = maxBytes;
    this.#token = options.token;
    this.#client = createGatewayClient(connection);
    this.#rest = createDeliveryRest(connection);
    this.#outbox = new DiscordOutbox(this.#rest, this.#log, options.retry);
    this.limits = flatLimits(() => this.#largestLimit());
  }

  /** Upload limits of one chat: the guild's boost level decides unless `maxBytes` is set. */
  limitsFor(target: ChatTarget): UploadLimits {
    return discordLimits({ maxBytes: this.#limitFor(target) });
  }

  health(): ChannelHealth {
    return {
      platform: "discord",
      profile: this.profile,
      state: this.#started ? "up" : "starting",
      sinceMs: Date.now(),
    };
  }

  async start({ onMessage }: ChannelStartOptions): Promise<void> {
    if (this.#started) throw new Error("DiscordChannel already started");
    this.#started = true;
    const client = this.#client;
    client.on(Events.MessageCreate, (message) => this.#onMessage(message, onMessage));
    client.on(Events.ShardResume, (_id, replayed) =>
      this.#log.info({ replayed }, "gateway resumed"),
    );
    client.on(Events.ShardDisconnect, (event) =>
      this.#log.warn({ code: event.code }, "gateway closed"),
    );
    client.on(Events.ShardReconnecting, () => this.#log.info("gateway reconnecting"));
    client.on(Events.Error, (error) =>
      this.#log.error({ err: describeError(error) }, "discord error"),
    );
    client.on(Events.Warn, (message) => this.#log.warn({ message }, "discord warning"));
    const ready = once(client, Events.ClientReady);
    ready.catch(() => undefined); // awaited below unless login fails first
    try {
      await client.login(this.#token);
      await ready;
    } catch (error) {
      this.#log.error({ err: describeError(error) }, "discord login failed");
      await client.destroy();
      throw toRequestError("login", error);
    }
    this.#log.info(
      { botUserId: client.user?.id, guilds: client.guilds.cache.size },
      "discord connected",
    );
  }

  async stop(): Promise<void> {
    this.#client.removeAllListeners(Events.MessageCreate);
    await this.#client.destroy();
    this.#rest.clearHashSweeper();
    this.#rest.clearHandlerSweeper();
  }

  async sendText(target: ChatTarget, text: string, signal?: AbortSignal): Promise<void> {
    await this.#outbox.sendText(channelOf(target), text, target.replyToMessageId, signal);
    this.#noteAnswered(target);
  }

  async deliver(reply: OutboundReply, options: DeliverOptions = {}): Promise<DeliveryReport> {
    const signal = options.signal;
    const limit = this.#limitFor(reply.target);
    const report = await this.#outbox.deliver(channelOf(reply.target), reply, limit, signal);
    this.#noteAnswered(reply.target);
    return report;
  }

  async showActivity(target: ChatTarget): Promise<void> {
    await this.#outbox.typing(channelOf(target));
  }

  #onMessage(message: Message, onMessage: (message: InboundMessage) => Promise<void>): void {
    const botUserId = this.#client.user?.id;
    if (botUserId === undefined) return;
    const inbound = toInboundMessage(message, {
      profile: this.profile,
      botUserId,
      channelIds: this.#channelIds,
      answeredThreads: this.#answeredThreads,
    });
    if (inbound === undefined) return;
    this.#log.debug(
      { chatType: inbound.chatType, chatId: inbound.chatId, threadId: inbound.threadId },
      "message in",
    );
    void onMessage(inbound);
  }

  #noteAnswered(target: ChatTarget): void {
    if (target.threadId !== undefined) this.#answeredThreads.add(target.threadId);
  }

  #limitFor(target: ChatTarget): number {
    const channel = this.#client.channels.cache.get(target.chatId);
    const tier = channel && "guild" in channel ? channel.guild.premiumTier : undefined;
    return uploadLimitFor(this.#configuredMaxBytes, tier);
  }

  #largestLimit(): number {
    let largest = uploadLimitFor(this.#configuredMaxBytes);
    for (const guild of this.#client.guilds.cache.values()) {
      largest = Math.max(largest, uploadLimitFor(this.#configuredMaxBytes, guild.premiumTier));
    }
    return largest;
  }
}

/** Replies in a thread go to the thread's channel id; otherwise to the chat. */
function channelOf(target: ChatTarget): string {
  return target.threadId ?? target.chatId;
}
