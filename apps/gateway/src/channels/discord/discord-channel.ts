import { once } from "node:events";
import { type Sleep, sleep, stopController } from "@mediagate/io";
import { discordLimits, type UploadLimits } from "@mediagate/media";
import {
  type ChatInputCommandInteraction,
  type Client,
  Events,
  GatewayDispatchEvents,
  type Interaction,
  type Message,
  MessageFlags,
  type REST,
} from "discord.js";
import { LRUCache } from "lru-cache";
import type { Logger } from "pino";
import { LeadershipLostError } from "../../cluster/errors.js";
import type { BotLeadership } from "../../cluster/leader-lease.js";
import { type MenuOffer, PlainOffer } from "../../commands/menu.js";
import { Defaults } from "../../defaults.js";
import type { ResolveHost } from "../http-download.js";
import { guardedListener } from "../listener-boundary.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChannelStartOptions,
  ChatCursor,
  ChatTarget,
  DeliverOptions,
  DeliveryReport,
  InboundHandler,
  InboundMessage,
  OutboundReply,
} from "../types.js";
import { DiscordAttachmentFetcher } from "./attachments.js";
import { DiscordCatchUp } from "./catch-up.js";
import { DiscordChoiceButtons } from "./choices.js";
import { createDeliveryRest, createGatewayClient, type IdentifyWait } from "./client.js";
import {
  type DiscordCommandOptions,
  InteractionReplies,
  interactionToInbound,
  isInteractionMessageId,
  registerDiscordCommands,
} from "./commands.js";
import { deliverReply } from "./deliver-reply.js";
import { describeError, interactionGone, toRequestError } from "./errors.js";
import { HealthMonitor } from "./health.js";
import { channelAllowed, toInboundMessage } from "./inbound.js";
import { InboundQueues, type InboundRetryOptions } from "./inbound-queue.js";
import { flatLimits, uploadLimitFor } from "./limits.js";
import { DiscordOutbox, type DiscordRetryOptions } from "./outbox.js";
import { createReactionRest, DiscordStatusReactions } from "./reactions.js";
import { DiscordStatusMessages } from "./status.js";

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
  /**
   * Guild channels answered without a mention (`channelIds`, their threads too), and the only
   * guild channels answered at all when `allowedChannelIds` is set (`discord.allowedChannels`;
   * their threads and the `channelIds` too). DMs are answered either way.
   */
  readonly respondIn?:
    | {
        readonly channelIds?: readonly string[] | undefined;
        readonly allowedChannelIds?: readonly string[] | undefined;
      }
    | undefined;
  /** `maxBytes` replaces the upload limit everywhere (see `uploadLimitFor`). */
  readonly limits?: { readonly maxBytes?: number | undefined } | undefined;
  readonly retry?: DiscordRetryOptions | undefined;
  /**
   * Largest attachment a user may send that is saved (`discord.downloadMaxBytes`); default
   * `Defaults.discord.downloadMaxBytes`. Larger ones are refused with a notice, unread
   * (docs/inbound-media.md).
   */
  readonly downloadMaxBytes?: number | undefined;
  /**
   * Per-request timeout of discord.js's REST (and of an attachment's headers); default
   * `Defaults.discord.requestTimeoutMs`.
   */
  readonly requestTimeoutMs?: number | undefined;
  /**
   * At most this many messages are fetched per chat by {@link DiscordChannel.catchUp} (the
   * oldest after the cursor); default `Defaults.discord.catchUpMaxMessages`, 0 turns catch-up
   * off. Later ones are not answered (logged).
   */
  readonly catchUpMaxMessages?: number | undefined;
  /**
   * Backoff while the message handler rejects (the journal cannot be written):
   * `Defaults.discord.inboundRetry` by default.
   */
  readonly inboundRetry?: InboundRetryOptions | undefined;
  /**
   * Messages a reply's text may take (`delivery.maxTextChunks`, default
   * `Defaults.delivery.maxTextChunks`); a longer reply is its head as that many messages and
   * the whole as `reply.txt` (docs/media.md).
   */
  readonly maxTextChunks?: number | undefined;
  /**
   * The slash commands (docs/sessions.md, "Command menus"): `register` (default true)
   * overwrites the bot's global application commands at start-up. Slash commands are
   * answered either way.
   */
  readonly commands?: DiscordCommandOptions | undefined;
  /** Waits of that backoff (tests pass a fast one). */
  readonly sleep?: Sleep | undefined;
  /**
   * Waits before each IDENTIFY; default discord.js's throttler (one per 5 s, as Discord
   * requires). Tests of a new session right after the first pass one that does not wait.
   */
  readonly identifyWait?: IdentifyWait | undefined;
  /** Clock of {@link DiscordChannel.health} (epoch ms). */
  readonly now?: (() => number) | undefined;
  /**
   * How the attachment fetcher resolves host names (default `dns.lookup`); tests map
   * Discord's CDN names to an address of theirs.
   */
  readonly resolveHost?: ResolveHost | undefined;
  /**
   * In a cluster (docs/cluster.md): the gateway connection is made only while this replica
   * holds the bot's lease. Absent: at start.
   */
  readonly leader?: BotLeadership | undefined;
}

/** Defaults of {@link DiscordChannelOptions}. */
export const DiscordChannelDefaults = {
  apiRoot: Defaults.discord.apiRoot,
  requestTimeoutMs: Defaults.discord.requestTimeoutMs,
  catchUpMaxMessages: Defaults.discord.catchUpMaxMessages,
  downloadMaxBytes: Defaults.discord.downloadMaxBytes,
  maxTextChunks: Defaults.delivery.maxTextChunks,
} as const satisfies Pick<
  Required<DiscordChannelOptions>,
  "apiRoot" | "requestTimeoutMs" | "catchUpMaxMessages" | "downloadMaxBytes" | "maxTextChunks"
>;

/**
 * Discord through discord.js (docs/media.md): guild channels (when mentioned or configured),
 * threads (their own sessions) and DMs in, with their attachments; replies as 2000-character chunks with balanced code
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
  /** Attachments users send, streamed from Discord's CDN (docs/inbound-media.md). */
  readonly attachments: DiscordAttachmentFetcher;
  /** A long turn's status message: create, edit, delete. */
  readonly status: DiscordStatusMessages;
  /** Status reactions on the users' messages: the bot's own reaction, added and removed. */
  readonly reactions: DiscordStatusReactions;
  readonly #token: string;
  readonly #client: Client;
  readonly #rest: REST;
  readonly #outbox: DiscordOutbox;
  readonly #log: Logger;
  readonly profile: string;
  readonly #channelIds: ReadonlySet<string>;
  readonly #allowedChannelIds: ReadonlySet<string> | undefined;
  readonly #configuredMaxBytes: number | undefined;
  /** Threads answered in, the most recent `answeredThreadsKept` (lru-cache drops the oldest). */
  readonly #answeredThreads = new LRUCache<string, true>({
    max: Defaults.discord.answeredThreadsKept,
  });
  readonly #health: HealthMonitor;
  readonly #leader: BotLeadership | undefined;
  readonly #inbound: InboundQueues;
  readonly #catchUp: DiscordCatchUp;
  readonly #catchUpMaxMessages: number;
  readonly #maxTextChunks: number;
  readonly #registerCommands: boolean;
  readonly #commandOffer: MenuOffer;
  readonly #interactions: InteractionReplies;
  /** Messages with buttons; presses arrive as component interactions. */
  readonly choices: DiscordChoiceButtons;
  /** The slash commands' registration, while it runs (resolves false when it failed). */
  registering: Promise<boolean> | undefined;
  /** Aborted by `stop`: ends in-memory retries and catch-up. */
  readonly #stopping = stopController();
  #started = false;
  /** `start` resolved. */
  #ready = false;

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
    const allowed = options.respondIn?.allowedChannelIds;
    this.#allowedChannelIds = allowed === undefined ? undefined : new Set(allowed);
    const maxBytes = options.limits?.maxBytes;
    if (maxBytes !== undefined && (!Number.isSafeInteger(maxBytes) || maxBytes <= 0)) {
      throw new RangeError(
        `DiscordChannel limits.maxBytes must be a positive integer, got ${maxBytes}`,
      );
    }
    this.#configuredMaxBytes = maxBytes;
    const maxTextChunks = options.maxTextChunks ?? DiscordChannelDefaults.maxTextChunks;
    if (!Number.isInteger(maxTextChunks) || maxTextChunks < 1) {
      throw new RangeError(
        `DiscordChannel maxTextChunks must be a whole number >= 1, got ${maxTextChunks}`,
      );
    }
    this.#maxTextChunks = maxTextChunks;
    const downloadMaxBytes = options.downloadMaxBytes ?? DiscordChannelDefaults.downloadMaxBytes;
    if (!Number.isSafeInteger(downloadMaxBytes) || downloadMaxBytes <= 0) {
      throw new RangeError(
        `DiscordChannel downloadMaxBytes must be a positive integer, got ${downloadMaxBytes}`,
      );
    }
    this.attachments = new DiscordAttachmentFetcher({
      apiRoot: connection.apiRoot,
      resolve: options.resolveHost,
      maxBytes: downloadMaxBytes,
      stallTimeoutMs: connection.requestTimeoutMs,
    });
    this.#token = options.token;
    this.#leader = options.leader;
    this.#client = createGatewayClient(connection, options.identifyWait);
    this.#rest = createDeliveryRest(connection);
    this.status = new DiscordStatusMessages(this.#rest, maxTextChunks);
    this.reactions = new DiscordStatusReactions(createReactionRest(connection));
    this.choices = new DiscordChoiceButtons(this.#rest, this.#log, async (slash, text) => {
      if (this.#interactions.has(slash)) await this.#interactions.answer(slash, text);
    });
    this.#registerCommands = options.commands?.register ?? Defaults.commandMenus.register;
    this.#commandOffer = options.commands?.offer ?? PlainOffer;
    this.#interactions = new InteractionReplies(this.#log, this.#commandOffer.pairing);
    this.#health = new HealthMonitor(
      this.#client,
      options.profile,
      this.#log,
      options.now ?? Date.now,
    );
    this.#outbox = new DiscordOutbox(this.#rest, this.#log, options.retry, () =>
      this.#health.unauthorized(),
    );
    this.limits = flatLimits(() => this.#largestLimit());
    const catchUpMax = options.catchUpMaxMessages ?? DiscordChannelDefaults.catchUpMaxMessages;
    if (!Number.isSafeInteger(catchUpMax) || catchUpMax < 0) {
      throw new RangeError(
        `DiscordChannel catchUpMaxMessages must be an integer >= 0, got ${catchUpMax}`,
      );
    }
    this.#catchUpMaxMessages = catchUpMax;
    const wait = options.sleep ?? sleep;
    this.#inbound = new InboundQueues(this.#log, wait, options.inboundRetry);
    this.#catchUp = new DiscordCatchUp({
      client: this.#client,
      queues: this.#inbound,
      maxMessages: catchUpMax,
      retry: options.retry,
      log: this.#log,
      sleep: wait,
      signal: this.#stopping.signal,
      onUnauthorized: () => this.#health.unauthorized(),
      toInbound: (message) => this.#toInbound(message),
    });
  }

  /** Upload limits of one chat: the guild's boost level decides unless `maxBytes` is set. */
  limitsFor(target: ChatTarget): UploadLimits {
    return discordLimits({ maxBytes: this.#limitFor(target) });
  }

  /**
   * `up` while the websocket is ready (`lastOkMs`: the last dispatch, READY/RESUMED or
   * heartbeat ack), `retrying` while discord.js reconnects or resumes, `failed` once Discord
   * refused the token (gateway close 4004, or a 401) or closed for good, `stopped` after `stop`.
   */
  /** The bot's mention (`<@id>`), once logged in: what addresses it in a guild channel. */
  addressedAs(): string | undefined {
    const id = this.#client.user?.id;
    return id === undefined ? undefined : `<@${id}>`;
  }

  health(): ChannelHealth {
    return this.#health.snapshot();
  }

  /**
   * Connects and resolves once the gateway is ready; each message the bot answers is handed to
   * `onMessage` in order per chat (see `InboundQueues`: a rejection is retried in memory). With
   * `cursors`, every gateway session (READY, the first one too) begins with a catch-up (see
   * `DiscordCatchUp.afterReady`). A failure during start rejects; after it, a refused token
   * calls `onFatal`.
   */
  async start({ onMessage, onFatal, cursors, onChoice }: ChannelStartOptions): Promise<void> {
    if (this.#started) throw new Error("DiscordChannel already started");
    this.#started = true;
    const client = this.#client;
    if (cursors !== undefined) this.#catchUpEverySession(cursors, onMessage);
    client.on(
      Events.MessageCreate,
      guardedListener(
        this.#log,
        "messageCreate",
        (message: Message) => this.#onMessage(message, onMessage),
        describeError,
      ),
    );
    client.on(
      Events.InteractionCreate,
      guardedListener(
        this.#log,
        "interactionCreate",
        (interaction: Interaction) =>
          interaction.isButton()
            ? this.choices.answer(interaction, this.profile, onChoice)
            : this.#onInteraction(interaction, onMessage),
        describeError,
      ),
    );
    this.#health.watch();
    client.on(Events.Error, (error) =>
      this.#log.error({ err: describeError(error) }, "discord error"),
    );
    client.on(Events.Warn, (message) => this.#log.warn({ message }, "discord warning"));
    if (this.#leader !== undefined) {
      // Up for sending at once; receiving starts when this replica takes the lease.
      this.#health.running(onFatal);
      this.#leader.start({
        lead: () => {
          // A login that fails after the lease was taken stops the gateway, as at start.
          this.#connect(onFatal).catch((error: unknown) =>
            onFatal(error instanceof Error ? error : new Error(String(error))),
          );
        },
        yieldLead: async () => {
          // discord.js cannot log in again after a destroy: the gateway stops, and starts
          // again as a follower (docs/cluster.md).
          this.#health.fatal(new LeadershipLostError("discord"));
          await this.#client.destroy();
        },
        standby: (waiting) => {
          this.#health.standby = waiting;
        },
      });
      return;
    }
    await this.#connect(onFatal);
  }

  /** Logs in and waits for READY; then up, and the slash commands are registered. */
  async #connect(onFatal: (error: Error) => void): Promise<void> {
    const client = this.#client;
    const ready = once(client, Events.ClientReady);
    ready.catch(() => undefined); // awaited below unless login fails first
    try {
      await client.login(this.#token);
      await ready;
    } catch (error) {
      this.#log.error({ err: describeError(error) }, "discord login failed");
      await client.destroy();
      const failure = this.#health.closedForGood ?? toRequestError("login", error);
      this.#health.startFailed(failure.message);
      throw failure;
    }
    this.#ready = true;
    this.#health.running(onFatal);
    this.#log.info(
      { botUserId: client.user?.id, guilds: client.guilds.cache.size },
      "discord connected",
    );
    if (this.#registerCommands) {
      const registering = registerDiscordCommands(client, this.#log, this.#commandOffer);
      this.registering = registering;
      void registering.finally(() => {
        if (this.registering === registering) this.registering = undefined;
      });
    } else {
      this.#log.info("discord slash commands not registered (commands.register: false)");
    }
  }

  /**
   * Hands `onMessage` the messages each chat received after its cursor, oldest first, mapped by
   * the same rules as live ones (so the bot's own messages and other bots' are skipped), at most
   * `catchUpMaxMessages` per chat. Live messages of a chat wait until it is fetched, then follow
   * in id order; one that is both live and fetched may reach `onMessage` twice (the journal
   * dedupes on the message id). A chat that is gone or unreadable is logged and skipped; one
   * whose fetch keeps failing is fetched again after a backoff. Resolves when every message was
   * accepted or the channel stopped; never rejects.
   *
   * `start` with `cursors` does this at every new gateway session; this is for a caller that
   * reads the cursors itself, before `start` (a live message recorded first would move a
   * chat's cursor past the messages still to fetch).
   */
  async catchUp(cursors: readonly ChatCursor[], onMessage: InboundHandler): Promise<void> {
    if (!this.#ready || this.#stopping.signal.aborted) {
      this.#log.error("discord catch-up needs a started channel; skipped");
      return;
    }
    if (this.#catchUpMaxMessages === 0) {
      this.#log.info("discord catch-up is off (catchUpMaxMessages: 0)");
      return;
    }
    await this.#catchUp.run(cursors, onMessage);
  }

  /**
   * Discord replays nothing into a new session (READY after an IDENTIFY, not a RESUME): what
   * was sent before it and not received is fetched. From the socket's close (or the start) to
   * RESUMED or the new session's cursors, no message is handed over.
   *
   * The fetch waits until the session's servers arrived (discord.js's `shardReady`: every
   * GUILD_CREATE, or its 15 s wait for them), not READY itself: READY lists every server as
   * unavailable, and only GUILD_CREATE says which threads the bot is a member of. A thread
   * fetched before it looks joined by no one, and its unmentioned messages would be dropped.
   */
  #catchUpEverySession(
    cursors: () => Promise<readonly ChatCursor[]>,
    onMessage: InboundHandler,
  ): void {
    if (this.#catchUpMaxMessages === 0) {
      this.#log.info("discord catch-up is off (catchUpMaxMessages: 0)");
      return;
    }
    this.#catchUp.disconnected();
    this.#client.on(Events.ShardReconnecting, () => this.#catchUp.disconnected());
    this.#client.on(Events.ShardResume, () => this.#catchUp.resumed());
    this.#client.ws.on(GatewayDispatchEvents.Ready, () => {
      this.#log.debug("discord gateway session began; waiting for its servers to catch up");
    });
    this.#client.on(Events.ShardReady, () => {
      void this.#catchUp.afterReady(cursors, onMessage);
    });
  }

  /** Stops receiving and retrying; sending keeps working. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    const dropped = this.#inbound.stop();
    if (dropped > 0) {
      this.#log.warn(
        { messages: dropped },
        "discord messages not recorded at stop; the next start's catch-up fetches them",
      );
    }
    this.#health.stopped();
    this.#client.removeAllListeners(Events.MessageCreate);
    // A registration still running is not waited for: discord.js may be waiting out a rate
    // limit, and it never rejects (its failure is a warning).
    this.#client.removeAllListeners(Events.InteractionCreate);
    await this.#client.destroy();
    // Closed while the lease is still held; released after, so another replica connects.
    await this.#leader?.stop();
    this.#rest.clearHashSweeper();
    this.#rest.clearHandlerSweeper();
  }

  /**
   * Sends `text` to the chat; the answer to a slash command (its target's message id is the
   * interaction's) is the command's ephemeral reply instead. After a restart, or once Discord
   * no longer takes answers to it (its token lives 15 minutes), the interaction is gone: the
   * answer is then posted in the chat, as a text command's would be.
   */
  async sendText(target: ChatTarget, text: string, signal?: AbortSignal): Promise<void> {
    const replyTo = target.replyToMessageId;
    if (this.#interactions.has(replyTo)) {
      try {
        await this.#interactions.answer(replyTo!, text);
        // Answered, if privately: the thread goes on without a mention, as after a typed command.
        this.#noteAnswered(target);
        return;
      } catch (error) {
        if (!interactionGone(error)) throw error;
        this.#interactions.forget(replyTo!);
        this.#log.warn(
          { err: describeError(error) },
          "discord slash command's interaction expired; its answer goes to the chat",
        );
      }
    }
    const reference = isInteractionMessageId(replyTo) ? undefined : replyTo;
    await this.#outbox.sendText(channelOf(target), text, reference, signal);
    this.#noteAnswered(target);
  }

  /** A slash command still waiting here is answered through its interaction (`sendText`). */
  answersInPlace(target: ChatTarget): boolean {
    return this.#interactions.has(target.replyToMessageId);
  }

  /** A slash command the core said nothing to (the sender is not allowed) is told so. */
  async settled(message: InboundMessage): Promise<void> {
    if (!isInteractionMessageId(message.messageId)) return;
    await this.#interactions.settle(message.messageId, message.userId);
  }

  /** See `deliverReply`: resumable with `options.progress`, stopped by `options.signal`. */
  async deliver(reply: OutboundReply, options: DeliverOptions = {}): Promise<DeliveryReport> {
    // A slash command is no message to reply to (its answer resumed after a crash, whose
    // interaction went with the process that held it: docs/durability.md).
    const { replyToMessageId } = reply.target;
    const reference = isInteractionMessageId(replyToMessageId) ? undefined : replyToMessageId;
    const report = await deliverReply(this.#outbox, this.#log, {
      channelId: channelOf(reply.target),
      reply: { ...reply, target: { ...reply.target, replyToMessageId: reference } },
      limitBytes: this.#limitFor(reply.target),
      maxTextChunks: this.#maxTextChunks,
      signal: options.signal,
      progress: options.progress,
    });
    this.#noteAnswered(reply.target);
    return report;
  }

  async showActivity(target: ChatTarget, signal?: AbortSignal): Promise<void> {
    await this.#outbox.typing(channelOf(target), signal);
  }

  #onMessage(message: Message, onMessage: InboundHandler): void {
    const inbound = this.#toInbound(message);
    if (inbound === undefined) return;
    this.#log.debug(
      { chatType: inbound.chatType, chatId: inbound.chatId, threadId: inbound.threadId },
      "message in",
    );
    void this.#inbound.push(message.channelId, inbound, onMessage);
  }

  /**
   * A slash command (docs/sessions.md, "Command menus"): acknowledged at once with an
   * ephemeral deferred reply, then handed to the core as the text command it stands for.
   * Inside its own error boundary: a failure before the core took it is logged with the step
   * that failed, and the user is told nothing was done.
   */
  async #onInteraction(interaction: Interaction, onMessage: InboundHandler): Promise<void> {
    if (!interaction.isChatInputCommand()) return;
    let step = "read";
    let deferred: string | undefined;
    try {
      const read = interactionToInbound(interaction, this.profile);
      if (read.kind === "unknown") {
        this.#log.info({ command: interaction.commandName }, "unknown discord slash command");
        await this.#replyOnce(interaction, "This command is not known to this bot (any more).");
        return;
      }
      if (read.kind === "unreadable") {
        this.#log.warn(
          { command: interaction.commandName, problem: read.problem },
          "discord slash command with options this gateway does not register; not run",
        );
        await this.#replyOnce(interaction, read.text);
        return;
      }
      const { inbound } = read;
      const rules = { channelIds: this.#channelIds, allowedChannelIds: this.#allowedChannelIds };
      if (
        inbound.chatType === "group" &&
        !channelAllowed(rules, inbound.chatId, inbound.threadId)
      ) {
        // Outside discord.allowedChannels: the bot keeps out, but an interaction must be answered.
        this.#log.debug(
          { command: interaction.commandName },
          "slash command outside allowedChannels",
        );
        await this.#replyOnce(interaction, "This bot does not answer in this channel.");
        return;
      }
      // The name only: the options are the sender's words, `/approve`'s a pairing code, which
      // is never logged (docs/security.md, "Pairing").
      this.#log.debug(
        { command: interaction.commandName, chatType: inbound.chatType, chatId: inbound.chatId },
        "slash command in",
      );
      step = "defer";
      if (!(await this.#interactions.defer(inbound.messageId, interaction))) return;
      deferred = inbound.messageId;
      step = "hand over";
      try {
        await onMessage(inbound);
      } catch (error) {
        // Not recorded (the gateway is stopping, or its journal cannot be written; the latter
        // was answered already): Discord redelivers nothing, so it is answered and forgotten.
        this.#log.warn({ err: describeError(error) }, "discord slash command not taken");
        await this.#interactions.abandon(
          inbound.messageId,
          "⚠️ Not done: the gateway cannot take commands right now. Try again in a moment.",
        );
      }
    } catch (error) {
      this.#log.error(
        { command: interaction.commandName, step, err: describeError(error) },
        `discord slash command failed at step "${step}"`,
      );
      const text = "⚠️ Not done: this command failed in the gateway. Try again, or type it.";
      if (deferred !== undefined) await this.#interactions.abandon(deferred, text);
      else await this.#replyOnce(interaction, text);
    }
  }

  async #replyOnce(interaction: ChatInputCommandInteraction, content: string): Promise<void> {
    try {
      await interaction.reply({ content, flags: MessageFlags.Ephemeral });
    } catch (error) {
      this.#log.warn({ err: describeError(error) }, "discord slash command answer not sent");
    }
  }

  #toInbound(message: Message): InboundMessage | undefined {
    const botUserId = this.#client.user?.id;
    if (botUserId === undefined) return undefined;
    return toInboundMessage(message, {
      profile: this.profile,
      botUserId,
      channelIds: this.#channelIds,
      answeredThreads: this.#answeredThreads,
      allowedChannelIds: this.#allowedChannelIds,
      agent: this.#commandOffer.agent,
    });
  }

  #noteAnswered(target: ChatTarget): void {
    if (target.threadId !== undefined) this.#answeredThreads.set(target.threadId, true);
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
