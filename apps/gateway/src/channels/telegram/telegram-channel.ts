import { combinedSignal, MediagateError, stopController } from "@mediagate/io";
import { telegramLimits, type UploadLimits } from "@mediagate/media";
import { Api, InputFile } from "grammy";
import type { Message } from "grammy/types";
import type { Logger } from "pino";
import { Defaults } from "../../defaults.js";
import { splitText } from "../../delivery/split-text.js";
import { lazyChild } from "../../log.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChannelStartOptions,
  ChatTarget,
  DeliverOptions,
  DeliveryReport,
  InboundHandler,
  OutboundReply,
} from "../types.js";
import { albumOf, type UpdateUnit } from "./albums.js";
import { TelegramFileFetcher } from "./attachments.js";
import { TelegramChoiceButtons } from "./choices.js";
import { registerTelegramMenus, telegramMenus } from "./commands.js";
import { deliverReply } from "./deliver-reply.js";
import { TelegramTextLimits } from "./delivery-steps.js";
import { failureFacts, TelegramDeliveryError } from "./errors.js";
import { HealthTracker } from "./health.js";
import { type GroupRules, toInboundMessage } from "./inbound.js";
import { sendWithPlainFallback } from "./markup-fallback.js";
import {
  type BotLeadership,
  type ResolvedTelegramOptions,
  resolveTelegramOptions,
  type TelegramChannelOptions,
} from "./options.js";
import { type PollingSettings, UpdatePoller } from "./polling.js";
import { TelegramStatusReactions } from "./reactions.js";
import { trackingFetch } from "./request-tracking.js";
import { grammySignal, type MediaSendContext } from "./send-media.js";
import { TelegramCaller } from "./sender.js";
import { TelegramStatusMessages } from "./status.js";
import { OutgoingTarget } from "./target.js";
import { startWebhookMode, type WebhookMode } from "./webhook-mode.js";
import type { WebhookSettings } from "./webhook-settings.js";

export { TelegramChannelDefaults, type TelegramChannelOptions } from "./options.js";

const AllowedUpdates = ["message", "channel_post", "callback_query"] as const;

/** Telegram could not be reached or refused the bot at start-up. Token-free. */
export class TelegramStartError extends MediagateError {
  override readonly name = "TelegramStartError";
  readonly code = "MG_TELEGRAM_START_FAILED";
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
 * The Telegram {@link ChannelAdapter}. Receives text and media messages (an album as one
 * message) of private chats, groups, forum topics and channels by long polling or a webhook
 * (docs/telegram-webhooks.md), confirming each update only once the core recorded it, and fetches their files on demand;
 * delivers text split at 4096 UTF-16 units and media by kind with retries, photo albums and
 * photo→document fallback (docs/media.md), each request bounded by its size and ambiguous
 * failures handled by policy (docs/durability.md).
 */
export class TelegramChannel implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly limits: UploadLimits;
  readonly profile: string;
  /** Files users send: getFile, then the file route or (localFiles) the disk. */
  readonly attachments: TelegramFileFetcher;
  /** A long turn's status message: sendMessage, editMessageText, deleteMessage. */
  readonly status: TelegramStatusMessages;
  /** Status reactions on the users' messages: setMessageReaction. */
  readonly reactions: TelegramStatusReactions;
  /** Messages with an inline keyboard; presses arrive as `callback_query` updates. */
  readonly choices: TelegramChoiceButtons;
  private readonly api: Api;
  private readonly token: string;
  private readonly logger: Logger;
  private readonly caller: TelegramCaller;
  private readonly dropPendingUpdates: boolean;
  private readonly polling: PollingSettings;
  private readonly health_: HealthTracker;
  private botUsername: string | undefined;
  private botId: number | undefined;
  private readonly groups: GroupRules;
  private readonly maxTextChunks: number;
  private poller: UpdatePoller | undefined;
  /** In a cluster: polls only while this replica holds the bot's lease (docs/cluster.md). */
  private readonly leader: BotLeadership | undefined;
  /** Whether polling was started (directly, or by waiting for the lease). */
  private polled = false;
  private readonly webhookSettings: WebhookSettings | undefined;
  private webhook: WebhookMode | undefined;
  private readonly commands: ResolvedTelegramOptions["commands"];
  /** Aborted by `stop`: ends the menus' registration. */
  private readonly stopping = stopController();
  /** Admin chats whose menu could not be set (e.g. "chat not found" before their first message). */
  private readonly menuPending = new Set<string>();
  /** The menus' registration, while it runs (tests and `stop` wait for it). */
  registering: Promise<void> | undefined;

  constructor(options: TelegramChannelOptions) {
    if (typeof options.token !== "string" || options.token.trim() === "") {
      throw new TypeError(
        "TelegramChannel needs a bot token: set TELEGRAM_BOT_TOKEN or the profile's telegram token",
      );
    }
    if (options.logger === undefined) throw new TypeError("TelegramChannel needs a pino logger");
    const settings = resolveTelegramOptions(options);
    this.token = options.token.trim();
    this.profile = options.profile;
    this.logger = options.logger.child({ channel: "telegram" });
    this.limits = telegramLimits(options.limits ?? {});
    this.caller = new TelegramCaller(this.token, this.logger, settings.caller);
    this.dropPendingUpdates = settings.dropPendingUpdates;
    this.polling = settings.polling;
    this.webhookSettings = settings.webhook;
    this.leader = settings.webhook === undefined ? options.leader : undefined;
    this.groups = settings.groups;
    this.maxTextChunks = settings.maxTextChunks;
    this.commands = settings.commands;
    this.health_ = new HealthTracker("telegram", this.profile);
    this.api = new Api(this.token, {
      apiRoot: settings.apiRoot,
      timeoutSeconds: Defaults.telegram.grammyTimeoutSeconds,
      // grammY types `fetch` as the platform one; it only ever calls `json()` on the answer.
      fetch: trackingFetch() as unknown as typeof fetch,
    });
    this.status = new TelegramStatusMessages(this.api, this.token, settings.maxTextChunks);
    this.reactions = new TelegramStatusReactions(this.api, this.token);
    this.choices = new TelegramChoiceButtons(this.api, this.token, this.logger);
    this.attachments = new TelegramFileFetcher({
      api: this.api,
      caller: this.caller,
      token: this.token,
      apiRoot: settings.apiRoot,
      logger: this.logger,
      maxBytes: settings.downloadMaxBytes,
      localFiles: settings.localFiles,
      stallTimeoutMs: settings.caller.requestTimeoutBaseMs,
    });
  }

  /**
   * Authorizes the bot (getMe, through the retry policy) and starts polling; resolves once
   * polling begins. Only messages, channel posts and button presses (`callback_query`,
   * answered at once, not journaled: a press is a choice, not a message) are requested. A rejection is a
   * token-free {@link TelegramStartError}. Later failures show in {@link health}; a refused
   * token calls `onFatal`.
   */
  async start({
    onMessage,
    onFatal,
    flush,
    recorded,
    onChoice,
  }: ChannelStartOptions): Promise<void> {
    if (this.polled || this.webhook !== undefined) return;
    this.health_.set("starting");
    const handle = async (unit: UpdateUnit, after?: Promise<boolean>) => {
      // A press is answered at once, not recorded: it waits for the unit ahead of it instead.
      // When that one will not be handed on in this process, neither is the press, and the
      // poller confirms neither: Telegram offers both again.
      if (after !== undefined && unit.some((update) => update.callback_query !== undefined)) {
        if (!(await after)) return;
      }
      for (const update of unit) {
        if (update.callback_query !== undefined)
          await this.choices.answer(update.callback_query, this.profile, onChoice);
      }
      await this.receive(unit, onMessage, recorded, after);
    };
    try {
      const me = await this.caller.call(
        "getMe",
        "-",
        (signal) => this.api.getMe(grammySignal(signal)),
        { idempotent: true },
      );
      this.botUsername = me.username;
      this.botId = me.id;
      if (this.webhookSettings !== undefined) {
        this.webhook = await startWebhookMode(
          {
            api: this.api,
            caller: this.caller,
            token: this.token,
            logger: this.logger,
            health: this.health_,
            allowedUpdates: AllowedUpdates,
            dropPendingUpdates: this.dropPendingUpdates,
            handle,
            flush: flush ?? (async () => {}),
            sleep: this.polling.sleep,
          },
          this.webhookSettings,
        );
      } else {
        // A webhook left set (webhook mode before, or another program) would make every
        // getUpdates fail with 409: switching back to polling deletes it.
        await this.caller.call(
          "deleteWebhook",
          "-",
          (signal) =>
            this.api.deleteWebhook(
              { drop_pending_updates: this.dropPendingUpdates },
              grammySignal(signal),
            ),
          { idempotent: true },
        );
      }
    } catch (error) {
      const facts =
        error instanceof TelegramDeliveryError
          ? error.facts
          : error instanceof MediagateError
            ? { description: error.message, status: undefined }
            : failureFacts(error, this.token);
      this.health_.set("failed", facts.description);
      throw new TelegramStartError(facts.description, facts.status);
    }
    if (this.webhook !== undefined) {
      this.health_.ok();
      this.logger.info(
        { bot: this.botUsername, listen: this.webhook.address },
        "telegram webhook set; updates arrive by webhook",
      );
    } else {
      this.health_.mode = "polling";
      this.polled = true;
      const poll = () => {
        this.poller = new UpdatePoller(
          {
            api: this.api,
            token: this.token,
            logger: this.logger,
            health: this.health_,
            allowedUpdates: AllowedUpdates,
            handle,
            flush: flush ?? (async () => {}),
            onFatal,
          },
          this.polling,
        );
        // Telegram answered getMe: up. A long poll answers only when a message comes or its
        // timeout passes, so waiting for the first one would show "starting" for up to 30 s.
        this.health_.ok();
        this.poller.start();
        this.logger.info({ bot: this.botUsername }, "telegram long polling started");
      };
      if (this.leader === undefined) poll();
      else {
        this.health_.ok();
        this.leader.start({
          lead: poll,
          yieldLead: async () => {
            const poller = this.poller;
            this.poller = undefined;
            this.logger.warn(
              { bot: this.botUsername },
              "telegram polling stopped: this replica no longer holds the bot's lease",
            );
            await poller?.stop({ confirm: false });
          },
          standby: (waiting) => {
            this.health_.standby = waiting;
            if (waiting) this.health_.ok();
          },
        });
      }
    }
    if (this.commands.register)
      this.registerMenus(telegramMenus(this.commands.adminChatIds, this.commands.offer));
    else this.logger.info("telegram command menus not registered (commands.register: false)");
  }

  /**
   * Sets the command menus in the background (docs/sessions.md, "Command menus"): a failure
   * is a warning, never a failed start. An admin chat whose menu failed is tried once more
   * when that admin next writes in private (Telegram knows no chat the user never opened).
   */
  private registerMenus(menus: Parameters<typeof registerTelegramMenus>[0]): void {
    const previous = this.registering ?? Promise.resolve();
    const run = previous.then(async () => {
      const failed = await registerTelegramMenus(menus, {
        api: this.api,
        caller: this.caller,
        logger: this.logger,
        signal: this.stopping.signal,
      });
      for (const chatId of failed) this.menuPending.add(chatId);
    });
    this.registering = run;
    void run.finally(() => {
      if (this.registering === run) this.registering = undefined;
    });
  }

  /**
   * Stops receiving. Polling: the poll in flight is abandoned at once and the updates already
   * recorded are confirmed to Telegram. Webhook: the port closes and the updates being recorded
   * finish first (the webhook stays set: Telegram keeps what comes meanwhile). Sending keeps
   * working.
   */
  async stop(): Promise<void> {
    this.stopping.abort();
    await this.registering;
    const webhook = this.webhook;
    this.webhook = undefined;
    if (webhook !== undefined) {
      await webhook.stop();
      this.health_.set("stopped");
    }
    const stopPolling = async () => {
      const poller = this.poller;
      this.poller = undefined;
      await poller?.stop();
    };
    // In a cluster the closing getUpdates runs while the lease is still held.
    if (this.leader === undefined) await stopPolling();
    else await this.leader.stop(stopPolling);
    this.polled = false;
  }

  /** `@username` from getMe, once started: how users address the bot in a group. */
  addressedAs(): string | undefined {
    return this.botUsername === undefined ? undefined : `@${this.botUsername}`;
  }

  health(): ChannelHealth {
    return this.health_.snapshot();
  }

  /**
   * Sends `text` as messages split at 4096 UTF-16 units (newline, then space; code fences
   * closed and reopened). Plain text, no parse mode: agent output is not trusted markup.
   * Rejects with a token-free {@link TelegramDeliveryError} when a chunk fails for good, is
   * held by a flood wait or aborted; a chunk that may have gone through (`unconfirmed`) is not
   * resent and the rest follow.
   */
  async sendText(target: ChatTarget, text: string, signal?: AbortSignal): Promise<void> {
    const out = new OutgoingTarget(target);
    for (const chunk of splitText(text, { maxLength: TelegramTextLimits.messageLength })) {
      try {
        await this.sendChunk(out, chunk, signal);
      } catch (error) {
        if (!(error instanceof TelegramDeliveryError && error.unconfirmed)) throw error;
      }
    }
  }

  /**
   * Sends the reply text and every ready item (see {@link deliverReply} for the order, where
   * the text goes, and how progress is skipped and recorded). Never throws: each ready item
   * gets an outcome, in plan order. Descriptors stay open: the caller disposes the plan.
   */
  async deliver(reply: OutboundReply, options: DeliverOptions = {}): Promise<DeliveryReport> {
    const { signal, progress } = options;
    const target = new OutgoingTarget(reply.target);
    const ctx: MediaSendContext = {
      api: this.api,
      caller: this.caller,
      target,
      logger: lazyChild(this.logger, { sessionKey: reply.sessionKey, chatId: target.chatId }),
      token: this.token,
      signal,
    };
    const report = await deliverReply(
      ctx,
      reply.text,
      reply.plan.ready(),
      {
        chunk: (part) =>
          sendWithPlainFallback(
            part,
            (text, parseMode) => this.sendChunk(target, text, signal, parseMode),
            ctx.logger,
          ),
        file: (file) => this.sendTextFile(target, file.filename, file.bytes, signal),
        maxChunks: this.maxTextChunks,
        format: reply.format,
      },
      progress,
    );
    for (const outcome of report.outcomes)
      this.logger.debug({ sessionKey: reply.sessionKey, ...outcome }, "media delivery");
    if (report.retryAfterSeconds !== undefined || report.textPending === true) {
      this.logger.warn(
        {
          sessionKey: reply.sessionKey,
          retryAfterSeconds: report.retryAfterSeconds,
          textPending: report.textPending,
        },
        "reply not fully delivered",
      );
    }
    return report;
  }

  /** Shows "typing…" in the chat (and topic). Best effort: one try, never throws. */
  async showActivity(target: ChatTarget, signal?: AbortSignal): Promise<void> {
    const out = new OutgoingTarget(target);
    const bound = AbortSignal.timeout(Defaults.telegram.activityTimeoutMs);
    const combined = signal === undefined ? undefined : combinedSignal([signal, bound]);
    try {
      await this.api.sendChatAction(
        out.chat,
        "typing",
        out.actionOptions(),
        grammySignal(combined?.signal ?? bound),
      );
    } catch (error) {
      this.logger.debug(
        { chatId: out.chatId, ...failureFacts(error, this.token) },
        "typing indicator failed",
      );
    } finally {
      combined?.release();
    }
  }

  /**
   * Maps an update, or an album's updates as one message, and hands it on; updates that are
   * not for the core resolve at once (confirmed). In webhook mode an album's item comes alone
   * and is handed on as an item of its album (`InboundMessage.album`). An album is handed on without its updates
   * the journal recorded before (`recorded`): offered again after a crash with an item more,
   * only that item runs, as a message of its own; with none more, nothing runs.
   */
  private async receive(
    unit: UpdateUnit,
    onMessage: InboundHandler,
    recorded: ChannelStartOptions["recorded"],
    after?: Promise<boolean>,
  ): Promise<void> {
    const items = unit.flatMap((update): { updateId: number; message: Message }[] => {
      const message = update.message ?? update.channel_post;
      return message === undefined ? [] : [{ updateId: update.update_id, message }];
    });
    const first = items[0];
    if (first === undefined) return;
    const updateIds = items.map((item) => item.updateId);
    const known =
      items.length > 1 && recorded !== undefined
        ? new Set([...(await recorded(updateIds.map(String)))].map(Number))
        : undefined;
    if (known !== undefined && updateIds.every((id) => known.has(id))) {
      this.logger.info(
        { updateIds },
        "telegram album offered again, every item recorded before; not run again",
      );
      return;
    }
    // A webhook posts each item of an album alone: it is recorded alone and the gateway runs
    // the album's items as one message (docs/telegram-webhooks.md, "Albums").
    const album =
      this.webhookSettings !== undefined && unit.length === 1 && unit[0] !== undefined
        ? albumOf(unit[0])
        : undefined;
    const inbound = toInboundMessage(
      items.map((item) => item.message),
      {
        profile: this.profile,
        botUsername: this.botUsername,
        botId: this.botId,
        groups: this.groups,
        updateIds,
        recorded: known,
        album,
      },
    );
    if (inbound === undefined) {
      const movedTo = first.message.migrate_to_chat_id;
      if (movedTo !== undefined) this.noteUpgrade(first.message.chat.id, movedTo);
      this.logger.debug(
        { updateId: first.updateId, chatId: first.message.chat.id },
        "telegram message not for the bot (a bot's, empty, or a group message not addressed to it); ignored",
      );
      return;
    }
    if (known !== undefined && known.size > 0) {
      this.logger.info(
        { updateIds, recorded: [...known], receiptId: inbound.receiptId },
        "telegram album offered again with items not recorded before; they run as a message of their own",
      );
    }
    if (inbound.chatType === "dm" && this.menuPending.delete(inbound.chatId)) {
      this.registerMenus(
        telegramMenus([inbound.chatId], this.commands.offer).filter(
          (menu) => menu.scope.type === "chat",
        ),
      );
    }
    await onMessage(inbound, after === undefined ? undefined : { after });
  }

  /**
   * A basic group became a supergroup, whose chat id is another (docs/sessions.md, "Groups"):
   * its messages come from `to` from now on. A warning when `groups.allowedChats` lists the
   * old id but not the new one: the bot would otherwise go quiet there without a word.
   */
  private noteUpgrade(from: number, to: number): void {
    const allowed = this.groups.allowedChats;
    const fields = { chatId: from, newChatId: to };
    if (allowed === undefined) {
      this.logger.info(fields, "telegram group became a supergroup with a new chat id");
    } else if (allowed.has(String(from)) && !allowed.has(String(to))) {
      this.logger.warn(
        fields,
        `telegram group ${from} became supergroup ${to}, which telegram.groups.allowedChats does not list: the bot ignores it until ${to} is added there`,
      );
    }
  }

  /** A long reply's whole text as a document (docs/media.md, "Long replies"). */
  private async sendTextFile(
    target: OutgoingTarget,
    filename: string,
    bytes: Buffer,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    await this.caller.call(
      "sendDocument",
      target.chatId,
      (attemptSignal) =>
        this.api.sendDocument(
          target.chat,
          new InputFile(bytes, filename),
          target.options(),
          grammySignal(attemptSignal),
        ),
      { signal, bytes: bytes.length },
    );
    target.sent();
  }

  private async sendChunk(
    target: OutgoingTarget,
    chunk: string,
    signal: AbortSignal | undefined,
    parseMode?: "HTML",
  ): Promise<void> {
    const options =
      parseMode === undefined ? target.options() : { ...target.options(), parse_mode: parseMode };
    await this.caller.call(
      "sendMessage",
      target.chatId,
      (attemptSignal) =>
        this.api.sendMessage(target.chat, chunk, options, grammySignal(attemptSignal)),
      { signal, bytes: Buffer.byteLength(chunk) },
    );
    target.sent();
  }
}
