import { type Clock, scheduleWithTimer, systemClock } from "@mediagate/io";
import { connectDocker, type DockerEngine } from "@mediagate/sandbox";
import { ApprovalBroker, ApprovalChoiceKind } from "../approvals/broker.js";
import { createChannels } from "../channels/factory.js";
import type { ChannelAdapter } from "../channels/types.js";
import { ChoiceRouter } from "../choices/router.js";
import type { ClusterIdentity } from "../cluster/identity.js";
import { LeaderLease, leaseName } from "../cluster/leader-lease.js";
import { ModelChoiceKind, ModelPickers } from "../commands/model-buttons.js";
import { ResetChoiceKind, ResetConfirmations } from "../commands/reset-buttons.js";
import { secretsOfConfig } from "../config/secrets.js";
import type { GatewayConfig } from "../config/types.js";
import { Defaults } from "../defaults.js";
import { SqliteJournal } from "../durable/journal.js";
import { lostJournalText } from "../durable/journal-marker.js";
import { Outbox } from "../durable/outbox.js";
import { PostgresJournal } from "../durable/postgres-journal.js";
import type { SessionLeases } from "../durable/session-leases.js";
import { SlotLeases } from "../durable/slot-leases.js";
import type { Journal } from "../durable/types.js";
import { logOpenCheck } from "../health/database-checks.js";
import { type Logger, silentLogger } from "../log.js";
import type { PipelineServices } from "../pipeline/types.js";
import { ProfileRuntime } from "../profiles/profile-runtime.js";
import { Redactor } from "../redact.js";
import { SlotRegistry } from "../sandbox-access/slot-registry.js";
import { taskPresses } from "../schedules/chat.js";
import type { TaskScheduler } from "../schedules/scheduler.js";
import type { TaskServices } from "../schedules/services.js";
import { TaskChoiceKind } from "../schedules/task-commands.js";
import { BusySessions } from "../session/busy.js";
import { LiveSessions } from "../session/live-sessions.js";
import { TurnQueue } from "../session/queue.js";
import { SqliteStateStore } from "../state/store.js";
import { AlbumGatherer } from "./albums.js";
import { clusterHealth } from "./cluster-health.js";
import { openCluster } from "./cluster-start.js";
import { channelFor, type GatewayCore } from "./core.js";
import { storeHealth } from "./health.js";
import { runAlbum } from "./inbound.js";
import { KeptTurns } from "./kept-turns.js";
import { GatewayDefaults, type GatewayOptions } from "./options.js";
import { resumeKeptTurn } from "./recovery.js";
import { replicaApprovals } from "./replica-approvals.js";
import { ReplicaSessions } from "./replica-sessions.js";
import { ReplicaSlots } from "./replica-slots.js";
import { openStoreBackend, type StoreBackend } from "./stores.js";

/** What `Gateway.create` opens before the gateway is built. */
export interface OpenedParts {
  readonly logger: Logger;
  readonly engine: DockerEngine;
  readonly runtimes: Map<string, ProfileRuntime>;
  readonly channels: readonly ChannelAdapter[];
  readonly journal: Journal;
  /** The store the journal and the state stores were opened from (docs/store.md). */
  readonly stores: StoreBackend;
  /** The cluster of a PostgreSQL store (docs/cluster.md). */
  readonly cluster: ClusterIdentity | undefined;
  /** PostgreSQL: the session leases of the replicas (docs/cluster.md); SQLite: none. */
  readonly leases: SessionLeases | undefined;
  /** PostgreSQL: the pins of persistent and `shared:` slots (docs/cluster.md); SQLite: none. */
  readonly pins: SlotLeases | undefined;
}

/**
 * Opens the journal, one runtime per profile (sandbox, state db, agent) and builds the
 * channels; nothing is started. What was opened is closed again when a later part fails.
 */
export async function openParts(
  config: GatewayConfig,
  options: GatewayOptions,
): Promise<OpenedParts> {
  const logger = options.logger ?? silentLogger();
  const engine = options.engine ?? connectDocker({ host: config.dockerHost });
  const homes = [config.home, ...config.profiles.map((p) => p.home)];
  const runtimes = new Map<string, ProfileRuntime>();
  let channels: readonly ChannelAdapter[];
  let journal: Journal | undefined;
  let leases: SessionLeases | undefined;
  let pins: SlotLeases | undefined;
  const stores = await openStoreBackend(config.store);
  let cluster: ClusterIdentity | undefined;
  try {
    cluster = await openCluster(config, stores);
    const clock = options.clock ?? systemClock;
    leases = await stores.openLeases({ now: () => clock.monoMs(), owner: options.instanceId });
    pins = await openPins(cluster, config, leases);
    const opened = await stores.openJournal(config.home, {
      now: () => clock.wallMs(),
      integrityWaitMs: options.integrityWaitMs,
      fence: leases,
      owner: options.instanceId,
    });
    journal = opened;
    if (opened instanceof SqliteJournal) {
      if (opened.lost !== undefined)
        logger.error({ path: opened.lost.path }, lostJournalText(opened.lost));
      logOpenCheck(logger, opened);
    }
    // Together: each state database's integrity check may take its whole wait.
    const opening = await Promise.allSettled(
      config.profiles.map((profile) => {
        const agent = options.agent;
        return ProfileRuntime.open({
          profile,
          engine,
          rootHome: config.home,
          replica:
            cluster === undefined
              ? undefined
              : { cluster: cluster.clusterId, replica: cluster.replicaId },
          dataSlotsRoot: cluster === undefined ? undefined : config.cluster?.slotsDir,
          protectedHomes: [...new Set(homes)],
          logger,
          agent: agent === undefined ? undefined : (store) => agent(profile, store),
          now: options.now,
          refusalSchedule: options.refusalSchedule,
          integrityWaitMs: options.integrityWaitMs,
          openStore: () =>
            stores.openState(profile, {
              now: options.now,
              integrityWaitMs: options.integrityWaitMs,
            }),
        });
      }),
    );
    for (const result of opening) {
      if (result.status === "fulfilled") runtimes.set(result.value.name, result.value);
    }
    const failed = opening.find((result) => result.status === "rejected");
    if (failed !== undefined) throw failed.reason;
    for (const runtime of runtimes.values()) {
      if (runtime.store instanceof SqliteStateStore) logOpenCheck(logger, runtime.store);
    }
    channels =
      options.channels ??
      (await createChannels(config, {
        logger,
        onConsoleClose: options.onConsoleClose,
        retrySleep: options.retrySleep,
        consoleTerminal: options.consoleTerminal,
        leaderFor: leaderFor(cluster, logger),
      }));
  } catch (error) {
    for (const runtime of runtimes.values())
      await runtime.close(GatewayDefaults.failedStartShutdownMs).catch(() => {});
    await journal?.close().catch(() => {});
    await stores.close();
    throw error;
  }
  return { logger, engine, runtimes, channels, journal, stores, cluster, leases, pins };
}

/** The slot pins of a replica (docs/cluster.md, "Sandboxes across replicas"), held as its leases' owner. */
async function openPins(
  cluster: ClusterIdentity | undefined,
  config: GatewayConfig,
  leases: SessionLeases | undefined,
): Promise<SlotLeases | undefined> {
  if (cluster === undefined || leases === undefined) return undefined;
  return SlotLeases.open(cluster.database, {
    replicaId: cluster.replicaId,
    sharedFiles: config.cluster?.slotsDir !== undefined,
    owner: leases.owner,
    clock: leases.clock,
  });
}

/** The leases one replica of `cluster` holds a bot's connection by (docs/cluster.md). */
function leaderFor(
  cluster: ClusterIdentity | undefined,
  logger: Logger,
): ((platform: "telegram" | "discord", token: string) => LeaderLease) | undefined {
  if (cluster === undefined) return undefined;
  return (platform, token) => botLease(cluster, platform, token, logger);
}

function botLease(
  cluster: ClusterIdentity,
  platform: "telegram" | "discord",
  token: string,
  logger: Logger,
): LeaderLease {
  let failing = false;
  return new LeaderLease({
    database: cluster.database,
    name: leaseName(platform, token),
    replicaId: cluster.replicaId,
    onError: (error) => {
      if (failing) return;
      failing = true;
      logger.warn(
        { err: error, platform },
        "the bot's leader lease could not be renewed or taken; retrying",
      );
    },
    onRecovered: () => {
      failing = false;
      logger.info({ platform }, "the bot's leader lease answers again");
    },
  });
}

/** Builds the outbox, the pipeline's services and the shared state around what was opened. */
export function composeCore(
  config: GatewayConfig,
  opened: OpenedParts,
  options: GatewayOptions,
): GatewayCore {
  const { logger, engine, runtimes, channels, journal, stores, cluster, leases, pins } = opened;
  const clock: Clock = options.clock ?? systemClock;
  const replicas =
    leases !== undefined && journal instanceof PostgresJournal
      ? new ReplicaSessions({
          leases,
          journal,
          schedule: options.replicaSchedule ?? scheduleWithTimer,
          now: () => clock.monoMs(),
          slots:
            pins === undefined || cluster === undefined
              ? undefined
              : new ReplicaSlots({
                  pins,
                  database: cluster.database,
                  now: () => clock.monoMs(),
                  idleReleaseMs: options.slotIdleReleaseMs,
                }),
        })
      : undefined;
  const outbox = new Outbox({
    journal,
    logger,
    channelFor: (profile, platform) => channelFor(opened, profile, platform),
    translateContextFor: (profile) => {
      const runtime = runtimes.get(profile);
      return runtime === undefined
        ? undefined
        : (slot, sessionKey, signal) => runtime.translateContext(slot, sessionKey, signal);
    },
    formatFor: (profile) => config.profiles.find((p) => p.name === profile)?.format ?? "plain",
    maxAttempts: config.delivery.maxAttempts,
    maxAgeMs: config.delivery.maxAgeSeconds * 1000,
    clock,
    schedule: options.outboxSchedule,
    // Never rejects; the sandbox's shutdown awaits it.
    onResumedClosed: (record) =>
      void runtimes.get(record.profile)?.sandbox.sweepSlotDir(record.slot),
  });
  const approvals = new ApprovalBroker({
    profileOf: (name) => runtimes.get(name),
    logger,
    schedule: options.approvalSchedule,
    ...(replicas === undefined ? {} : replicaApprovals(replicas.leases)),
  });
  const choices = new ChoiceRouter((error, press) =>
    logger.error(
      { err: error, profile: press.profile, chatId: press.chatId },
      "button press failed",
    ),
  ).on(ApprovalChoiceKind, approvals.onPress);
  const resets = new ResetConfirmations({
    runtimeOf: (name) => runtimes.get(name),
    services: () => services,
    now: () => clock.wallMs(),
    logger,
  });
  choices.on(ResetChoiceKind, resets.onPress);
  const models = new ModelPickers({ runtimeOf: (name) => runtimes.get(name), logger });
  choices.on(ModelChoiceKind, models.onPress);
  const schedulers = new Map<string, TaskScheduler>();
  const schedules: TaskServices = {
    schedulerOf: (profile) => schedulers.get(profile),
    now: () => (options.taskClock ?? clock).wallMs(),
  };
  choices.on(
    TaskChoiceKind,
    taskPresses({ ...schedules, runtimeOf: (name) => runtimes.get(name), logger }),
  );
  const queue = new TurnQueue({
    concurrency: config.concurrency,
    onError: (sessionKey, error) =>
      logger.error({ err: error, sessionKey }, "turn failed outside its handlers"),
  });
  const services: PipelineServices = {
    approvals,
    resetButtons: resets,
    modelButtons: models,
    schedules,
    queue,
    busy: new BusySessions(),
    slots: new SlotRegistry({ busy: (sessionKey) => queue.busy(sessionKey) }),
    journal,
    outbox,
    channels: () => channels.map((c) => c.health()),
    store: () => storeHealth(core),
    cluster: () => clusterHealth(core),
    keep: (turn) => core.kept.add(turn),
    activityIntervalMs: options.activityIntervalMs,
    typingAfterMs: options.typingAfterMs,
    progressClock: options.progressClock,
    live:
      config.web === undefined ? undefined : new LiveSessions({ max: Defaults.web.maxSessions }),
    sessions: replicas,
  };
  const core: GatewayCore = {
    config,
    engine,
    logger,
    runtimes,
    channels,
    journal,
    stores,
    cluster,
    replica: undefined,
    outbox,
    services,
    options,
    clock,
    inFlight: new Set(),
    toldNotRecorded: new Set(),
    journalProblem: undefined,
    engineProbe: {},
    storeProbe: {},
    clusterProbe: {},
    redactor: options.redactor ?? new Redactor(secretsOfConfig(config)),
    web: undefined,
    accepting: false,
    choices,
    albums: new AlbumGatherer({
      quietMs: Defaults.telegram.webhookAlbumQuietMs,
      maxItems: Defaults.telegram.albumMaxItems,
      schedule: options.albumSchedule ?? scheduleWithTimer,
      run: (album) => runAlbum(core, album),
    }),
    schedulers,
    recoveredRuns: new Map(),
    replicas,
    kept: new KeptTurns({
      probe: () => stores.database?.ping() ?? Promise.resolve(),
      resume: (turn) => resumeKeptTurn(core, turn),
      backoff: {
        baseMs: Defaults.gateway.keptRetryMinMs,
        maxMs: Defaults.gateway.keptRetryMaxMs,
      },
      schedule: scheduleWithTimer,
      logger,
    }),
  };
  return core;
}

/** Start-up notes for the operator (e.g. a profile where nobody is allowed). */
export function startWarnings(
  config: GatewayConfig,
  channels: readonly ChannelAdapter[],
): string[] {
  return config.profiles
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
