import { isLoopbackHost, parseListenAddress, type Sleep, settledWithin } from "@mediagate/io";
import { connectDocker, type DockerEngine } from "@mediagate/sandbox";
import { ensureWebToken, startWebConsole, type WebConsole } from "@mediagate/web";
import { accessOf } from "./access-control/access.js";
import type { Agent } from "./agents/types.js";
import type { SharedTerminal } from "./channels/console-terminal.js";
import { createChannels } from "./channels/factory.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChatCursor,
  ChatTarget,
  InboundMessage,
  Platform,
} from "./channels/types.js";
import { emptyEnv, type GatewayEnv } from "./config/env.js";
import type { GatewayConfig, ProfileConfig } from "./config/types.js";
import { Defaults } from "./defaults.js";
import { StorageError } from "./durable/errors.js";
import { journalDbPath, SqliteJournal } from "./durable/journal.js";
import { lostJournalText } from "./durable/journal-marker.js";
import { Outbox, type OutboxOptions } from "./durable/outbox.js";
import type { Journal, JournalEntry, OutboxRecord } from "./durable/types.js";
import { logOpenCheck } from "./health/database-checks.js";
import {
  type HealthReport,
  type HealthServer,
  overallStatus,
  startHealthServer,
} from "./health/server.js";
import { type Logger, silentLogger } from "./log.js";
import { handleMessage } from "./pipeline/pipeline.js";
import type { MessageContext, PipelineServices } from "./pipeline/types.js";
import { ProfileRuntime } from "./profiles/profile-runtime.js";
import { SlotRegistry } from "./sandbox-access/slot-registry.js";
import { BusySessions } from "./session/busy.js";
import { SessionScope } from "./session/context.js";
import { buildSessionKey } from "./session/key.js";
import { LiveSessions } from "./session/live-sessions.js";
import { TurnQueue } from "./session/queue.js";
import { GatewayStopping } from "./session/stopping.js";
import type { StateStore } from "./state/store.js";
import type { ProgressClock } from "./turn-progress/progress.js";
import { createConsoleSource } from "./web/console-source.js";
import type { LogRing } from "./web/log-ring.js";

/** Defaults of {@link Gateway}. */
export const GatewayDefaults = {
  ...Defaults.gateway,
  drainTimeoutMs: Defaults.drainTimeoutSeconds * 1000,
} as const;

/** The line a chat gets after a restart for a turn a crash or a stop cut off. */
export function interruptedText(message: InboundMessage): string {
  const preview = message.text.length > 60 ? `${message.text.slice(0, 57)}…` : message.text;
  return `⚠️ The gateway restarted while working on your message “${preview}”. It did not finish, and commands it started may have run in part. Send it again if you still want it.`;
}

/** The line a chat gets when its message cannot be recorded (the journal's disk). */
export const NotRecordedText =
  "⚠️ Your message could not be saved: the gateway's disk is full or failing. It will be answered once it can be saved; no need to send it again.";

/**
 * The line a chat gets when its message cannot be recorded because the journal is damaged:
 * nothing heals that by itself, so nothing is promised.
 */
export const NotRecordedDamagedText =
  "⚠️ Your message could not be saved: the gateway's journal is damaged and its operator has to replace it. It may not be answered; if no reply comes, send it again later.";

/** Options of {@link Gateway.create}. */
export interface GatewayOptions {
  readonly env?: GatewayEnv;
  readonly logger?: Logger;
  /** Replaces the channels built from the config (tests drive the gateway through these). */
  readonly channels?: readonly ChannelAdapter[];
  /** A Docker engine to use instead of `connectDocker({ host: config.dockerHost })`. */
  readonly engine?: DockerEngine;
  /** Replaces each profile's configured agent. */
  readonly agent?: (profile: ProfileConfig, store: StateStore) => Agent;
  /** Called when the console's input ends (the CLI shuts down). */
  readonly onConsoleClose?: () => void;
  /** The terminal the console shares with the logs, when it does (the CLI finds out). */
  readonly consoleTerminal?: SharedTerminal | undefined;
  /**
   * Called once when a channel gives up for good (e.g. its token was revoked): the CLI stops
   * and exits non-zero.
   */
  readonly onFatal?: (error: Error) => void;
  /** Overrides `config.drainTimeoutSeconds`. */
  readonly drainTimeoutMs?: number;
  /** Typing renewal period (default `Defaults.activity.intervalMs`). */
  readonly activityIntervalMs?: number;
  /** How long a turn runs before it shows typing (default `Defaults.activity.typingAfterMs`). */
  readonly typingAfterMs?: number;
  /**
   * Replaces the clock and timers of turns' status messages (docs/sessions.md, "Live
   * progress"): tests post and edit them by hand instead of waiting seconds.
   */
  readonly progressClock?: ProgressClock;
  /**
   * Replaces the clock of the profiles' state databases: pairing codes expire by it
   * (docs/security.md, "Pairing"); tests move it past a code's lifetime instead of waiting.
   */
  readonly now?: () => number;
  /** Replaces the outbox's timers (tests fire a long `retry_after` at once). */
  readonly outboxSchedule?: OutboxOptions["schedule"];
  /**
   * Replaces the wait between attempts of a send of the channels built from the config (a
   * short `retry_after`, a backoff); tests record it and go on at once.
   */
  readonly retrySleep?: Sleep;
  /** The log lines the web console's Logs page shows (the ring the logger also writes to). */
  readonly logRing?: LogRing | undefined;
  /**
   * Replaces `Defaults.database.integrityWaitMs` for the journal and the state databases:
   * tests start on a damaged file without waiting for its check.
   */
  readonly integrityWaitMs?: number;
}

/**
 * The gateway: one {@link ProfileRuntime} per profile (sandbox, state database, agent), the
 * channels, the per-install journal and outbox, one session scope and one turn queue for the
 * whole process. Usable in-process.
 */
export class Gateway {
  readonly config: GatewayConfig;
  readonly engine: DockerEngine;
  readonly logger: Logger;
  readonly runtimes: ReadonlyMap<string, ProfileRuntime>;
  readonly channels: readonly ChannelAdapter[];
  readonly journal: Journal;
  readonly outbox: Outbox;
  /** Start-up notes for the operator (e.g. a profile where nobody is allowed); the CLI prints them. */
  readonly warnings: readonly string[];
  readonly #services: PipelineServices;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #drainTimeoutMs: number;
  readonly #options: GatewayOptions;
  /** Receipts whose chat was told the message could not be saved (told once each). */
  readonly #toldNotRecorded = new Set<string>();
  #journalProblem: string | undefined;
  #engineCheck: { atMs: number; reachable: boolean; detail?: string | undefined } | undefined;
  #health: HealthServer | undefined;
  #web: WebConsole | undefined;
  #pruneTimer: NodeJS.Timeout | undefined;
  #accepting = false;
  #stopping: Promise<void> | undefined;
  #fatal = false;

  private constructor(
    config: GatewayConfig,
    engine: DockerEngine,
    logger: Logger,
    runtimes: Map<string, ProfileRuntime>,
    channels: readonly ChannelAdapter[],
    journal: Journal,
    options: GatewayOptions,
    env: GatewayEnv,
  ) {
    this.config = config;
    this.engine = engine;
    this.logger = logger;
    this.runtimes = runtimes;
    this.channels = channels;
    this.journal = journal;
    this.#options = options;
    this.#drainTimeoutMs = options.drainTimeoutMs ?? config.drainTimeoutSeconds * 1000;
    this.outbox = new Outbox({
      journal,
      logger,
      channelFor: (profile, platform) => this.#channelFor(profile, platform),
      translateContextFor: (profile) => {
        const runtime = this.runtimes.get(profile);
        return runtime === undefined
          ? undefined
          : (slot, sessionKey, signal) => runtime.translateContext(slot, sessionKey, signal);
      },
      maxAttempts: config.delivery.maxAttempts,
      maxAgeMs: config.delivery.maxAgeSeconds * 1000,
      schedule: options.outboxSchedule,
    });
    this.#services = {
      queue: new TurnQueue({
        concurrency: config.concurrency,
        onError: (sessionKey, error) =>
          logger.error({ err: error, sessionKey }, "turn failed outside its handlers"),
      }),
      busy: new BusySessions(),
      scope: new SessionScope({ fallbackSessionKey: env.sessionKey }),
      slots: new SlotRegistry(),
      journal,
      outbox: this.outbox,
      channels: () => this.channels.map((c) => c.health()),
      activityIntervalMs: options.activityIntervalMs,
      typingAfterMs: options.typingAfterMs,
      progressClock: options.progressClock,
      live:
        config.web === undefined ? undefined : new LiveSessions({ max: Defaults.web.maxSessions }),
    };
    this.warnings = config.profiles
      .filter((p) => p.allowedUsers.length === 0 && p.admins.length === 0)
      .filter(
        (p) =>
          p.telegram !== undefined ||
          p.discord !== undefined ||
          channels.some((c) => c.platform !== "console"),
      )
      .map((p) =>
        p.access === "pairing"
          ? `profile ${p.name}: no admins and no allowedUsers: only users approved with \`mediagate pairing approve CODE\` may use it`
          : `profile ${p.name}: nobody is allowed (allowedUsers and admins are empty); every message will be ignored`,
      );
  }

  /** Builds runtimes (sandbox, state db, agent), the journal and channels; nothing is started yet. */
  static async create(config: GatewayConfig, options: GatewayOptions = {}): Promise<Gateway> {
    const env = options.env ?? emptyEnv();
    const logger = options.logger ?? silentLogger();
    const engine = options.engine ?? connectDocker({ host: config.dockerHost });
    const homes = [config.home, ...config.profiles.map((p) => p.home)];
    const runtimes = new Map<string, ProfileRuntime>();
    let channels: readonly ChannelAdapter[];
    let journal: Journal | undefined;
    try {
      const opened = await SqliteJournal.open(
        journalDbPath(config.home),
        options.integrityWaitMs === undefined ? {} : { integrityWaitMs: options.integrityWaitMs },
      );
      journal = opened;
      if (opened.lost !== undefined)
        logger.error({ path: opened.lost.path }, lostJournalText(opened.lost));
      logOpenCheck(logger, opened);
      for (const profile of config.profiles) {
        const agent = options.agent;
        const runtime = await ProfileRuntime.open({
          profile,
          engine,
          rootHome: config.home,
          protectedHomes: [...new Set(homes)],
          logger,
          agent: agent === undefined ? undefined : (store) => agent(profile, store),
          now: options.now,
          integrityWaitMs: options.integrityWaitMs,
        });
        runtimes.set(profile.name, runtime);
        logOpenCheck(logger, runtime.store);
      }
      channels =
        options.channels ??
        createChannels(config, {
          logger,
          onConsoleClose: options.onConsoleClose,
          retrySleep: options.retrySleep,
          consoleTerminal: options.consoleTerminal,
        });
    } catch (error) {
      for (const runtime of runtimes.values())
        await runtime.close(GatewayDefaults.failedStartShutdownMs).catch(() => {});
      await journal?.close().catch(() => {});
      throw error;
    }
    return new Gateway(config, engine, logger, runtimes, channels, journal, options, env);
  }

  /**
   * Recovers what a previous process left (docs/durability.md): its messages whose turn never
   * started run, its cut-off turns get a notice in their chat (or run again with
   * `recovery.rerunInterrupted`), its unfinished replies are delivered from the outbox; then
   * every channel starts, Discord catches up on what was sent while nobody listened, and the
   * sandboxes' orphans of dead processes are reaped.
   */
  async start(): Promise<void> {
    this.#accepting = true;
    if (this.config.healthListen !== undefined) {
      this.#health = await startHealthServer(this.config.healthListen, () => this.health());
      this.logger.info({ url: this.#health.url }, "health endpoint listening");
    }
    await this.#startWeb();
    await this.#prune();
    this.#pruneTimer = setInterval(
      () => void this.#prune(),
      GatewayDefaults.journalPruneIntervalMs,
    );
    this.#pruneTimer.unref();
    const recovered = await this.#recover();
    // Cursors are read before the channels start: a live message recorded first would move
    // its chat's cursor past the messages still to fetch.
    const cursors = new Map<ChannelAdapter, readonly ChatCursor[]>();
    for (const channel of this.channels) {
      if (channel.catchUp !== undefined)
        cursors.set(channel, await this.journal.cursors(channel.profile));
    }
    for (const channel of this.channels) {
      await channel.start({
        onMessage: (message) => this.#received(channel, message),
        onFatal: (error) => this.#onFatal(channel, error),
        flush: () => this.journal.sync(),
      });
      this.logger.info({ platform: channel.platform, profile: channel.profile }, "channel started");
    }
    for (const [channel, chats] of cursors) {
      if (channel.catchUp === undefined || chats.length === 0) continue;
      this.logger.info(
        { platform: channel.platform, profile: channel.profile, chats: chats.length },
        "catching up on messages sent while the gateway was down",
      );
      this.#track(
        channel
          .catchUp(chats, (message) => this.#received(channel, message))
          .catch((error: unknown) => this.logger.error({ err: error }, "catch-up failed")),
      );
    }
    // Unfinished replies are resumed once the channels are up (Discord knows its guilds'
    // upload limits only after login); the reap waits for their attempt, since they plan
    // their media from the slot directories a dead process's containers used.
    this.#track(
      this.outbox.resume(recovered).then(async () => {
        for (const runtime of this.runtimes.values()) {
          // Honours `orphanReaper`; never throws (failures go to the sandbox's warnings).
          const result = await runtime.sandbox.reapOrphansOnce();
          if (result !== undefined && (result.removed.length > 0 || result.failed.length > 0))
            this.logger.info({ profile: runtime.name, ...result }, "orphaned sandboxes reaped");
        }
      }),
    );
  }

  /** The web console's `http://host:port`, while it runs (docs/web-console.md). */
  get webUrl(): string | undefined {
    return this.#web?.url;
  }

  /** Starts the web console when `web:` is configured; a non-loopback address is warned about. */
  async #startWeb(): Promise<void> {
    const web = this.config.web;
    const live = this.#services.live;
    if (web === undefined || live === undefined) return;
    const { host } = parseListenAddress(web.listen);
    if (!isLoopbackHost(host)) {
      this.logger.warn(
        { listen: web.listen },
        "the web console listens on a non-loopback address: anyone who can reach it can try the console token, and it is plain HTTP (the token and the session cookie cross the network unencrypted); put it behind a TLS proxy or keep it on 127.0.0.1",
      );
    }
    this.#web = await startWebConsole({
      listen: web.listen,
      allowedHosts: web.allowedHosts,
      token: await ensureWebToken(this.config.home),
      logger: this.logger,
      source: createConsoleSource({
        runtimes: this.runtimes,
        services: this.#services,
        live,
        ring: this.#options.logRing,
        journal: this.journal,
        logger: this.logger,
        health: () => this.health(),
        channelFor: (profile, platform) => this.#channelFor(profile, platform),
      }),
    });
    this.logger.info({ url: this.#web.url }, "web console listening");
  }

  /** Resolves when every message received so far has been fully handled. */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /** What the health endpoint reports (also used by `/status`). */
  async health(): Promise<HealthReport> {
    const channels: ChannelHealth[] = this.channels.map((c) => c.health());
    const engine = await this.#engineReachable();
    const queue = this.#services.queue;
    const damage = this.journal.damage;
    const journal: HealthReport["journal"] =
      damage === undefined
        ? { writable: this.#journalProblem === undefined, detail: this.#journalProblem }
        : { writable: false, damaged: true, detail: damage.message };
    return {
      status: overallStatus(channels, journal, engine.reachable),
      channels,
      journal,
      engine,
      queue: { running: queue.active, queued: queue.pending },
      outbox: { scheduled: this.outbox.scheduled },
    };
  }

  /**
   * Graceful stop: stop receiving on every channel first (Telegram confirms what was recorded),
   * then take no new messages, let running turns and deliveries finish (bounded by the drain
   * timeout). At the deadline nothing is lost: messages still queued stay in the journal for
   * the next start, running turns are cut off and stay recorded as started (their chats are
   * told after the restart), uploads are aborted and stay in the outbox. Then the sandboxes'
   * outstanding cleanups, the state databases and the journal are closed. Safe to call twice.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    clearInterval(this.#pruneTimer);
    await this.#web?.close().catch((error: unknown) => {
      this.logger.warn({ err: error }, "web console close failed");
    });
    for (const channel of this.channels) {
      await channel.stop().catch((error: unknown) => {
        this.logger.warn({ err: error, platform: channel.platform }, "channel stop failed");
      });
    }
    this.#accepting = false;
    const queue = this.#services.queue;
    queue.close();
    const drained = await settledWithin(this.idle(), this.#drainTimeoutMs, { unref: true });
    if (!drained) {
      this.logger.warn(
        { running: queue.active, queued: queue.pending },
        "drain deadline: running turns are cut off (their chats are told after the restart), queued messages and unfinished replies stay in the journal for the next start",
      );
      queue.shutdown(new GatewayStopping());
    }
    await this.outbox.stop(GatewayDefaults.abortGraceMs);
    await settledWithin(this.idle(), GatewayDefaults.abortGraceMs, { unref: true });
    for (const runtime of this.runtimes.values()) {
      await runtime.close(GatewayDefaults.shutdownTimeoutMs).catch((error: unknown) => {
        this.logger.warn({ err: error, profile: runtime.name }, "profile shutdown failed");
      });
    }
    await this.#health?.close();
    const released = await this.journal.release().catch((error: unknown) => {
      this.logger.warn({ err: error }, "could not release the journal's unfinished work");
      return 0;
    });
    if (released > 0)
      this.logger.info({ released }, "unfinished work left in the journal for the next start");
    await this.journal.close().catch((error: unknown) => {
      this.logger.warn({ err: error }, "journal close failed");
    });
  }

  /** Whether the engine answers a ping, reused for a few seconds (probes may poll often). */
  async #engineReachable(): Promise<{ reachable: boolean; detail?: string | undefined }> {
    const cached = this.#engineCheck;
    if (cached !== undefined && Date.now() - cached.atMs < GatewayDefaults.engineCheckTtlMs)
      return { reachable: cached.reachable, detail: cached.detail };
    let check: { atMs: number; reachable: boolean; detail?: string | undefined };
    try {
      await this.engine.ping();
      check = { atMs: Date.now(), reachable: true };
    } catch (error) {
      check = {
        atMs: Date.now(),
        reachable: false,
        detail: error instanceof Error ? error.message : String(error),
      };
    }
    this.#engineCheck = check;
    return { reachable: check.reachable, detail: check.detail };
  }

  /** Deletes handled messages and closed replies older than the retention. */
  async #prune(): Promise<void> {
    const pruned = await this.journal
      .prune(Date.now() - GatewayDefaults.journalRetentionMs)
      .catch((error: unknown) => {
        this.logger.warn({ err: error }, "could not prune the journal");
        return 0;
      });
    if (pruned > 0) this.logger.info({ pruned }, "old journal records pruned");
  }

  #channelFor(profile: string, platform: Platform): ChannelAdapter | undefined {
    return this.channels.find((c) => c.profile === profile && c.platform === platform);
  }

  #track(work: Promise<unknown>): void {
    const done: Promise<void> = work
      .then(() => undefined)
      .catch((error: unknown) => this.logger.error({ err: error }, "background work failed"))
      .finally(() => this.#inFlight.delete(done));
    this.#inFlight.add(done);
  }

  /** {@link #receive}, counted by {@link idle} from the moment the message arrives. */
  #received(channel: ChannelAdapter, message: InboundMessage): Promise<void> {
    const receiving = this.#receive(channel, message);
    this.#track(receiving.catch(() => {}));
    return receiving;
  }

  /**
   * The channels' message handler: the message is recorded in the journal before it returns
   * (so before the platform is told it arrived). A redelivered message already recorded is
   * not run again. When the journal cannot be written the message is not confirmed (the
   * rejection tells the channel) and its chat is told once.
   */
  async #receive(channel: ChannelAdapter, message: InboundMessage): Promise<void> {
    if (!this.#accepting)
      throw new Error("the gateway is stopping; the message is left unconfirmed");
    let recorded: { id: number; fresh: boolean };
    try {
      recorded = await this.journal.record(message);
    } catch (error) {
      await this.#notRecorded(channel, message, error);
      throw error;
    }
    if (this.#journalProblem !== undefined) {
      this.logger.info("journal writable again");
      this.#journalProblem = undefined;
    }
    if (!recorded.fresh) {
      this.logger.info(
        { profile: message.profile, platform: message.platform, receiptId: message.receiptId },
        "message redelivered by the platform was recorded before; not run again",
      );
      return;
    }
    this.#dispatch(channel, message, recorded.id);
  }

  async #notRecorded(
    channel: ChannelAdapter,
    message: InboundMessage,
    error: unknown,
  ): Promise<void> {
    const detail = error instanceof Error ? error.message : String(error);
    this.#journalProblem = detail;
    const damaged = error instanceof StorageError && error.damaged;
    this.logger.error(
      {
        err: error,
        profile: message.profile,
        platform: message.platform,
        receiptId: message.receiptId,
      },
      damaged
        ? "message not recorded: the journal is damaged (see the error for the way out); it stays unconfirmed"
        : "message not recorded: the journal cannot be written; it stays unconfirmed",
    );
    const key = `${message.profile}:${message.platform}:${message.receiptId}`;
    const runtime = this.runtimes.get(message.profile);
    const allowed =
      runtime !== undefined && accessOf(runtime.profile, message.platform, message.userId).allowed;
    if (!allowed || this.#toldNotRecorded.has(key)) return;
    if (this.#toldNotRecorded.size > 10_000) this.#toldNotRecorded.clear();
    this.#toldNotRecorded.add(key);
    if (!(error instanceof StorageError)) return;
    const notice = damaged ? NotRecordedDamagedText : NotRecordedText;
    await channel.sendText(targetOf(message), notice).catch((sendError: unknown) => {
      this.logger.warn({ err: sendError }, "could not tell the chat its message was not saved");
    });
  }

  #onFatal(channel: ChannelAdapter, error: Error): void {
    if (this.#fatal) return;
    this.#fatal = true;
    this.logger.fatal(
      { err: error, platform: channel.platform, profile: channel.profile },
      "channel failed for good; stopping",
    );
    this.#options.onFatal?.(error);
  }

  /**
   * Takes over what a dead (or stopped) process left: dispatches its messages that ran no
   * command, puts a notice for each cut-off turn in the outbox; resolves with the replies to
   * resume (those notices included).
   */
  async #recover(): Promise<OutboxRecord[]> {
    const entries = await this.journal.takeOver();
    const notices: OutboxRecord[] = [];
    for (const entry of entries) {
      const notice = await this.#recoverEntry(entry);
      if (notice !== undefined) notices.push(notice);
    }
    const replies = await this.journal.takeOverReplies();
    if (entries.length > 0 || replies.length > 0) {
      this.logger.info(
        {
          messages: entries.filter((e) => e.state === "received").length,
          interrupted: entries.filter((e) => e.state === "started").length,
          replies: replies.length,
        },
        "recovering what the previous process left",
      );
    }
    return [...notices, ...replies];
  }

  async #recoverEntry(entry: JournalEntry): Promise<OutboxRecord | undefined> {
    const { message } = entry;
    const channel = this.#channelFor(message.profile, message.platform);
    const runtime = this.runtimes.get(message.profile);
    if (channel === undefined || runtime === undefined) {
      this.logger.warn(
        { profile: message.profile, platform: message.platform },
        "recorded message for a channel that is no longer configured; dropped",
      );
      await this.journal.finished(entry.id, "interrupted");
      return;
    }
    if (entry.state === "received" || this.config.rerunInterrupted) {
      this.#dispatch(channel, message, entry.id, true);
      return undefined;
    }
    // The notice is a reply like any other: recorded with the entry's close in one
    // transaction, delivered (and retried) by the outbox, never sent twice.
    const sessionKey = buildSessionKey(message, runtime.profile);
    return this.outbox.record(
      {
        profile: message.profile,
        platform: message.platform,
        sessionKey,
        slot: runtime.slotFor(sessionKey),
        target: targetOf(message),
        text: interruptedText(message),
      },
      entry.id,
    );
  }

  /** Runs the message through the pipeline; `recovered`: taken over from the journal. */
  #dispatch(
    channel: ChannelAdapter,
    message: InboundMessage,
    entryId: number,
    recovered = false,
  ): void {
    const runtime = this.runtimes.get(message.profile);
    if (runtime === undefined) {
      this.logger.warn({ profile: message.profile }, "message for an unknown profile; ignored");
      void this.journal.finished(entryId, "refused").catch(() => {});
      return;
    }
    const ctx: MessageContext = {
      message,
      channel,
      runtime,
      services: this.#services,
      target: targetOf(message),
      entryId,
      recovered,
      log: this.logger.child({ profile: message.profile, platform: message.platform }),
    };
    // The pipeline's error boundary reports what its steps did not handle (by step name).
    this.#track(handleMessage(ctx).then(() => channel.settled?.(message)));
  }
}

function targetOf(message: InboundMessage): ChatTarget {
  return {
    platform: message.platform,
    chatId: message.chatId,
    threadId: message.threadId,
    replyToMessageId: message.messageId,
  };
}
