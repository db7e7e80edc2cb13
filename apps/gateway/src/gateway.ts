import { settledWithin } from "@mediagate/io";
import type { DockerEngine } from "@mediagate/sandbox";
import type { ChannelAdapter } from "./channels/types.js";
import { packageVersion } from "./cli/version.js";
import type { GatewayConfig } from "./config/types.js";
import { coalescedSync } from "./durable/coalesced-sync.js";
import type { Outbox } from "./durable/outbox.js";
import type { Journal } from "./durable/types.js";
import { joinCluster, leaveCluster, leavingCluster } from "./gateway/cluster-start.js";
import { composeCore, type OpenedParts, openParts, startWarnings } from "./gateway/compose.js";
import { type GatewayCore, track } from "./gateway/core.js";
import { healthReport } from "./gateway/health.js";
import { fullCollection, IdleCollection } from "./gateway/idle-collection.js";
import { received } from "./gateway/inbound.js";
import { GatewayDefaults, type GatewayOptions } from "./gateway/options.js";
import { recover } from "./gateway/recovery.js";
import { startSchedules, stopSchedules } from "./gateway/schedules-start.js";
import { startWeb } from "./gateway/web-start.js";
import { type HealthReport, type HealthServer, startHealthServer } from "./health/server.js";
import type { Logger } from "./log.js";
import type { ProfileRuntime } from "./profiles/profile-runtime.js";
import { GatewayStoppingError } from "./session/stopping.js";

export {
  NotRecordedDamagedText,
  NotRecordedText,
  NotRecordedUnreachableText,
} from "./gateway/inbound.js";
export { GatewayDefaults, type GatewayOptions } from "./gateway/options.js";
export { interruptedText } from "./gateway/recovery.js";

/**
 * The gateway: one {@link ProfileRuntime} per profile (sandbox, state database, agent), the
 * channels, the per-install journal and outbox, one session scope and one turn queue for the
 * whole process. Usable in-process. Its parts live in `./gateway/`: composition
 * (`compose.ts`), receiving (`inbound.ts`), crash recovery (`recovery.ts`), health
 * (`health.ts`) and the web console's start (`web-start.ts`); this class is their lifecycle.
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
  /** The state the parts share (receiving, recovery, health, the web console). */
  readonly #core: GatewayCore;
  readonly #drainTimeoutMs: number;
  readonly #options: GatewayOptions;
  #health: HealthServer | undefined;
  #pruneTimer: NodeJS.Timeout | undefined;
  /** Collects the heap once the messages stop for a while (made at start). */
  #idleCollection: IdleCollection | undefined;
  #stopping: Promise<void> | undefined;
  #fatal = false;
  /** The channels' flush: one journal sync for all of them that ask at once. */
  readonly #flush = coalescedSync(() => this.journal.sync());

  private constructor(config: GatewayConfig, opened: OpenedParts, options: GatewayOptions) {
    this.#core = composeCore(config, opened, options);
    this.config = config;
    this.engine = opened.engine;
    this.logger = opened.logger;
    this.runtimes = opened.runtimes;
    this.channels = opened.channels;
    this.journal = opened.journal;
    this.outbox = this.#core.outbox;
    this.#options = options;
    this.#drainTimeoutMs = options.drainTimeoutMs ?? config.drainTimeoutSeconds * 1000;
    this.warnings = startWarnings(config, opened.channels);
  }

  /** Builds runtimes (sandbox, state db, agent), the journal and channels; nothing is started yet. */
  static async create(config: GatewayConfig, options: GatewayOptions = {}): Promise<Gateway> {
    return new Gateway(config, await openParts(config, options), options);
  }

  /**
   * Recovers what a previous process left (docs/durability.md): its status messages still
   * showing are cleared, its messages whose turn never started run, its cut-off turns get a
   * notice in their chat (or run again with `recovery.rerunInterrupted`), its unfinished
   * replies are delivered from the outbox; then every channel starts (Discord catches up on
   * what was sent while nobody listened, at this and every later new gateway session), and the
   * sandboxes' orphans of dead processes are reaped.
   */
  async start(): Promise<void> {
    await joinCluster(this.#core, this.#options.version ?? packageVersion());
    this.#core.accepting = true;
    if (this.config.healthListen !== undefined) {
      this.#health = await startHealthServer(
        this.config.healthListen,
        () => this.health(),
        this.#core.redactor,
      );
      this.logger.info({ url: this.#health.url }, "health endpoint listening");
    }
    await startWeb(this.#core);
    await this.#prune();
    // Before any turn: recovered turns keep their session's order across replicas, and
    // containers left here (by a SIGKILL) of slots that moved meanwhile are removed.
    await this.#core.replicas?.prepare(this.#core);
    this.#pruneTimer = setInterval(
      () => void this.#prune(),
      GatewayDefaults.journalPruneIntervalMs,
    );
    this.#pruneTimer.unref();
    this.#idleCollection = new IdleCollection({
      quietMs: GatewayDefaults.idleCollectionQuietMs,
      collect: fullCollection(),
    });
    this.#idleCollection.start();
    // What a dead process left is reaped only after its replies' resumed attempt (below),
    // which reads their files from its slot directories: a turn's first acquire, recovered
    // ones included, would otherwise start the reap at once.
    let replyAttempted = (): void => {};
    const attempted = new Promise<void>((resolve) => {
      replyAttempted = resolve;
    });
    for (const runtime of this.runtimes.values()) {
      // Replies still pending after that (a failed first attempt, a long `retry_after`) keep
      // their slot's directory through every reap, until closed (the outbox's onResumedClosed).
      runtime.sandbox.deferReap(attempted, () => this.journal.pendingReplySlots(runtime.name));
    }
    const recovered = await recover(this.#core);
    for (const channel of this.channels) {
      await channel.start({
        onMessage: (message, options) => {
          this.#idleCollection?.touch();
          return received(this.#core, channel, message, options);
        },
        onChoice: (press) => this.#core.choices.press(press),
        onFatal: (error) => this.#onFatal(channel, error),
        flush: this.#flush,
        cursors: () => this.journal.cursors(channel.profile),
        recorded: async (receiptIds) =>
          new Set(await this.journal.recorded(channel.profile, channel.platform, receiptIds)),
      });
      this.logger.info({ platform: channel.platform, profile: channel.profile }, "channel started");
    }
    // Albums taken over from the journal wait from now on, while the channels take in the
    // items their platform still holds.
    this.#core.albums.start();
    // Replicas: from now on this process also takes over what dead replicas leave, and runs
    // the messages others hand it (docs/cluster.md).
    this.#core.replicas?.start(this.#core);
    await startSchedules(this.#core);
    // Unfinished replies are resumed once the channels are up (Discord knows its guilds'
    // upload limits only after login); the reap waits for their attempt, since they plan
    // their media from the slot directories a dead process's containers used.
    const resumed = this.outbox.resume(recovered);
    resumed.then(replyAttempted, replyAttempted);
    track(
      this.#core,
      resumed.then(async () => {
        for (const runtime of this.runtimes.values()) {
          // Honours `orphanReaper`; never throws (failures go to the sandbox's warnings).
          const result = await runtime.sandbox.reapOrphansOnce();
          if (result !== undefined && (result.removed.length > 0 || result.failed.length > 0))
            this.logger.info({ profile: runtime.name, ...result }, "orphaned sandboxes reaped");
          // Per-session profiles with `sandbox.warmPool`: filled in the background, never
          // awaited (a failed fill goes to the sandbox's warnings).
          void runtime.sandbox.warmUp();
        }
      }),
    );
  }

  /** The web console's `http://host:port`, while it runs (docs/web-console.md). */
  get webUrl(): string | undefined {
    return this.#core.web?.url;
  }

  /** Resolves when every message received so far has been fully handled. */
  async idle(): Promise<void> {
    while (this.#core.inFlight.size > 0) await Promise.allSettled([...this.#core.inFlight]);
  }

  /** What the health endpoint reports (also used by `/status`). */
  health(): Promise<HealthReport> {
    return healthReport(this.#core);
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
    await leavingCluster(this.#core);
    clearInterval(this.#pruneTimer);
    this.#idleCollection?.stop();
    stopSchedules(this.#core);
    this.#core.kept.stop();
    await this.#core.web?.close().catch((error: unknown) => {
      this.logger.warn({ err: error }, "web console close failed");
    });
    for (const channel of this.channels) {
      await channel.stop().catch((error: unknown) => {
        this.logger.warn({ err: error, platform: channel.platform }, "channel stop failed");
      });
    }
    this.#core.accepting = false;
    this.#core.replicas?.quiesce();
    // An album still open stays recorded: the next start gathers it with the items to come.
    this.#core.albums.stop();
    const queue = this.#core.services.queue;
    queue.close();
    const drained = await settledWithin(this.idle(), this.#drainTimeoutMs, { unref: true });
    if (!drained) {
      this.logger.warn(
        { running: queue.active, queued: queue.pending },
        "drain deadline: running turns are cut off (their chats are told after the restart), queued messages and unfinished replies stay in the journal for the next start",
      );
      queue.shutdown(new GatewayStoppingError());
    }
    // No press can reach this process any more: its /reset questions say to ask again.
    await this.#core.services.resetButtons?.closeAll();
    await this.outbox.stop(GatewayDefaults.abortGraceMs);
    await settledWithin(this.idle(), GatewayDefaults.abortGraceMs, { unref: true });
    await this.#core.replicas?.releaseSlots();
    for (const runtime of this.runtimes.values()) {
      await runtime.close(GatewayDefaults.shutdownTimeoutMs).catch((error: unknown) => {
        this.logger.warn({ err: error, profile: runtime.name }, "profile shutdown failed");
      });
    }
    await this.#health?.close();
    await this.#core.replicas?.stop();
    const released = await this.journal.release().catch((error: unknown) => {
      this.logger.warn({ err: error }, "could not release the journal's unfinished work");
      return 0;
    });
    if (released > 0)
      this.logger.info({ released }, "unfinished work left in the journal for the next start");
    await leaveCluster(this.#core);
    await this.journal.close().catch((error: unknown) => {
      this.logger.warn({ err: error }, "journal close failed");
    });
    await this.#core.stores.close();
  }

  /** Deletes handled messages and closed replies older than the retention. */
  async #prune(): Promise<void> {
    const pruned = await this.journal
      .prune(this.#core.clock.wallMs() - GatewayDefaults.journalRetentionMs)
      .catch((error: unknown) => {
        this.logger.warn({ err: error }, "could not prune the journal");
        return 0;
      });
    if (pruned > 0) this.logger.info({ pruned }, "old journal records pruned");
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
}
