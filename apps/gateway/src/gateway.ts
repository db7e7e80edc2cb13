import { connectDocker, type DockerEngine } from "@mediagate/sandbox";
import type { Agent } from "./agents/types.js";
import { createChannels } from "./channels/factory.js";
import type { ChannelAdapter, InboundMessage } from "./channels/types.js";
import { emptyEnv, type GatewayEnv } from "./config/env.js";
import type { GatewayConfig, ProfileConfig } from "./config/types.js";
import { type Logger, silentLogger } from "./log.js";
import { handleMessage } from "./pipeline/pipeline.js";
import type { MessageContext, PipelineServices } from "./pipeline/types.js";
import { ProfileRuntime } from "./runtime/profile-runtime.js";
import { SlotRegistry } from "./runtime/slot-registry.js";
import { SessionScope } from "./session/context.js";
import { TurnQueue } from "./session/queue.js";
import type { StateStore } from "./state/store.js";

/** Defaults of {@link Gateway}. */
export const GatewayDefaults = {
  /** How long stop() lets running turns and deliveries finish before aborting them. */
  drainTimeoutMs: 15_000,
  /** After aborting, how long stop() waits for the aborted turns to settle. */
  abortGraceMs: 5_000,
  /** How long stop() waits for each sandbox's outstanding cleanups. */
  shutdownTimeoutMs: 15_000,
} as const;

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
  readonly drainTimeoutMs?: number;
  /** Typing renewal period (default 4 s). */
  readonly activityIntervalMs?: number;
}

function delay(ms: number): Promise<"timeout"> {
  return new Promise((resolve) => setTimeout(() => resolve("timeout"), ms).unref());
}

/**
 * The gateway: one {@link ProfileRuntime} per profile (sandbox, state database, agent), the
 * channels, one session scope and one turn queue for the whole process. Usable in-process.
 */
export class Gateway {
  readonly config: GatewayConfig;
  readonly engine: DockerEngine;
  readonly logger: Logger;
  readonly runtimes: ReadonlyMap<string, ProfileRuntime>;
  readonly channels: readonly ChannelAdapter[];
  /** Start-up notes for the operator (e.g. a profile where nobody is allowed); the CLI prints them. */
  readonly warnings: readonly string[];
  readonly #services: PipelineServices;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #drainTimeoutMs: number;
  #accepting = false;
  #stopping: Promise<void> | undefined;

  private constructor(
    config: GatewayConfig,
    engine: DockerEngine,
    logger: Logger,
    runtimes: Map<string, ProfileRuntime>,
    channels: readonly ChannelAdapter[],
    options: GatewayOptions,
    env: GatewayEnv,
  ) {
    this.config = config;
    this.engine = engine;
    this.logger = logger;
    this.runtimes = runtimes;
    this.channels = channels;
    this.#drainTimeoutMs = options.drainTimeoutMs ?? GatewayDefaults.drainTimeoutMs;
    this.#services = {
      queue: new TurnQueue({
        concurrency: config.concurrency,
        onError: (sessionKey, error) =>
          logger.error({ err: error, sessionKey }, "turn failed outside its handlers"),
      }),
      scope: new SessionScope({ fallbackSessionKey: env.sessionKey }),
      slots: new SlotRegistry(),
      activityIntervalMs: options.activityIntervalMs,
    };
    this.warnings = config.profiles
      .filter((p) => p.allowedUsers.length === 0 && p.admins.length === 0)
      .filter(
        (p) =>
          p.telegram !== undefined ||
          p.discord !== undefined ||
          channels.some((c) => c.platform !== "console"),
      )
      .map(
        (p) =>
          `profile ${p.name}: nobody is allowed (allowedUsers and admins are empty); every message will be ignored`,
      );
  }

  /** Builds runtimes (sandbox, state db, agent) and channels; nothing is started yet. */
  static async create(config: GatewayConfig, options: GatewayOptions = {}): Promise<Gateway> {
    const env = options.env ?? emptyEnv();
    const logger = options.logger ?? silentLogger();
    const engine = options.engine ?? connectDocker({ host: config.dockerHost });
    const homes = [config.home, ...config.profiles.map((p) => p.home)];
    const runtimes = new Map<string, ProfileRuntime>();
    let channels: readonly ChannelAdapter[];
    try {
      for (const profile of config.profiles) {
        const agent = options.agent;
        runtimes.set(
          profile.name,
          await ProfileRuntime.open({
            profile,
            engine,
            rootHome: config.home,
            protectedHomes: [...new Set(homes)],
            logger,
            agent: agent === undefined ? undefined : (store) => agent(profile, store),
          }),
        );
      }
      channels =
        options.channels ??
        createChannels(config, { logger, onConsoleClose: options.onConsoleClose });
    } catch (error) {
      for (const runtime of runtimes.values()) await runtime.close(1_000).catch(() => {});
      throw error;
    }
    return new Gateway(config, engine, logger, runtimes, channels, options, env);
  }

  /** Starts every channel; messages flow from here on. */
  async start(): Promise<void> {
    this.#accepting = true;
    for (const channel of this.channels) {
      await channel.start({
        onMessage: async (message) => this.#onMessage(channel, message),
        onFatal: (error) => this.logger.fatal({ err: error }, "channel failed"),
      });
      this.logger.info({ platform: channel.platform }, "channel started");
    }
  }

  /** Resolves when every message received so far has been fully handled. */
  async idle(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /**
   * Graceful stop: stop receiving on every channel first (a message that still arrives while
   * the channels stop is handled like any other), then take no new messages, let running
   * turns and deliveries finish (bounded by `drainTimeoutMs`, then abort them), await the
   * sandboxes' outstanding cleanups and close the state databases. Safe to call twice.
   *
   * Receiving stops before the drain, not after it: a Telegram update fetched during the drain
   * and ignored would still be confirmed by the final poll, and so be lost for the next process.
   */
  stop(): Promise<void> {
    this.#stopping ??= this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    for (const channel of this.channels) {
      await channel.stop().catch((error: unknown) => {
        this.logger.warn({ err: error, platform: channel.platform }, "channel stop failed");
      });
    }
    this.#accepting = false;
    const queue = this.#services.queue;
    queue.close();
    const drained = await Promise.race([
      this.idle().then(() => "idle" as const),
      delay(this.#drainTimeoutMs),
    ]);
    if (drained === "timeout") {
      this.logger.warn({ running: queue.active }, "drain timed out; aborting running turns");
      queue.abortAll(new Error("gateway shutting down"));
      await Promise.race([this.idle(), delay(GatewayDefaults.abortGraceMs)]);
    }
    for (const runtime of this.runtimes.values()) {
      await runtime.close(GatewayDefaults.shutdownTimeoutMs).catch((error: unknown) => {
        this.logger.warn({ err: error, profile: runtime.name }, "profile shutdown failed");
      });
    }
  }

  #onMessage(channel: ChannelAdapter, message: InboundMessage): void {
    if (!this.#accepting) return;
    const runtime = this.runtimes.get(message.profile);
    if (runtime === undefined) {
      this.logger.warn({ profile: message.profile }, "message for an unknown profile; ignored");
      return;
    }
    const ctx: MessageContext = {
      message,
      channel,
      runtime,
      services: this.#services,
      target: {
        platform: message.platform,
        chatId: message.chatId,
        threadId: message.threadId,
        replyToMessageId: message.messageId,
      },
      log: this.logger.child({ profile: message.profile, platform: message.platform }),
    };
    const done = handleMessage(ctx)
      .catch((error: unknown) => ctx.log.error({ err: error }, "message handling failed"))
      .finally(() => this.#inFlight.delete(done));
    this.#inFlight.add(done);
  }
}
