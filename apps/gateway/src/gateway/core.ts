import type { Clock } from "@mediagate/io";
import type { DockerEngine } from "@mediagate/sandbox";
import type { WebConsole } from "@mediagate/web";
import type { ChannelAdapter, ChatTarget, InboundMessage, Platform } from "../channels/types.js";
import type { ChoiceRouter } from "../choices/router.js";
import type { ClusterIdentity } from "../cluster/identity.js";
import type { ReplicaRegistry } from "../cluster/replica-registry.js";
import type { GatewayConfig } from "../config/types.js";
import type { Outbox } from "../durable/outbox.js";
import type { Journal } from "../durable/types.js";
import type { ClusterHealth } from "../health/server.js";
import type { Logger } from "../log.js";
import type { PipelineServices } from "../pipeline/types.js";
import type { ProfileRuntime } from "../profiles/profile-runtime.js";
import type { Redactor } from "../redact.js";
import type { SubmittedRun, TaskScheduler } from "../schedules/scheduler.js";
import type { AlbumGatherer } from "./albums.js";
import type { KeptTurns } from "./kept-turns.js";
import type { GatewayOptions } from "./options.js";
import type { StoreBackend } from "./stores.js";

/** One probe of the store's database: whether it answered, and how fast. */
export interface StoreCheck {
  readonly reachable: boolean;
  readonly roundTripMs?: number | undefined;
  readonly detail?: string | undefined;
  /** Wall-clock ms since when it has not answered. */
  readonly downSinceMs?: number | undefined;
}

/** The engine's answer to a ping. */
export interface EngineCheck {
  readonly reachable: boolean;
  readonly detail?: string | undefined;
}

/** A health probe's last answer (and when, by the monotonic clock) and the probe under way. */
export interface ProbeSlot<T> {
  last?: { readonly atMs: number; readonly value: T } | undefined;
  running?: Promise<T> | undefined;
}

/**
 * What the gateway's parts share: the facade (`../gateway.ts`) builds one and hands it to
 * receiving, recovery, health and the web console's start. Its mutable fields are the
 * gateway's state; each is written by one part.
 */
export interface GatewayCore {
  readonly config: GatewayConfig;
  readonly engine: DockerEngine;
  readonly logger: Logger;
  readonly runtimes: ReadonlyMap<string, ProfileRuntime>;
  readonly channels: readonly ChannelAdapter[];
  readonly journal: Journal;
  /** The store the journal and the state stores live on (docs/store.md). */
  readonly stores: StoreBackend;
  /** This replica's cluster (docs/cluster.md); absent on SQLite. */
  readonly cluster: ClusterIdentity | undefined;
  /** This replica's registration, once started (cluster-start). */
  replica: ReplicaRegistry | undefined;
  readonly outbox: Outbox;
  readonly services: PipelineServices;
  readonly options: GatewayOptions;
  readonly clock: Clock;
  /** Work counted by `Gateway.idle`. */
  readonly inFlight: Set<Promise<void>>;
  /** Receipts whose chat was told the message could not be saved (told once each). */
  readonly toldNotRecorded: Set<string>;
  /** Why the journal could not be written last time, until it can again (inbound). */
  journalProblem: string | undefined;
  /** The database probe's last answer and the one under way (health; PostgreSQL only). */
  readonly storeProbe: ProbeSlot<StoreCheck>;
  /** The engine ping's last answer and the one under way (health). */
  readonly engineProbe: ProbeSlot<EngineCheck>;
  /** The cluster's replica list under way (health; PostgreSQL only). */
  readonly clusterProbe: ProbeSlot<ClusterHealth>;
  /**
   * Cuts the config's secrets (and secret-shaped values) out of what leaves the process by
   * other ways than the log: the health endpoint's answers, the web console's failures.
   */
  readonly redactor: Redactor;
  /** The web console, while it runs (web-start). */
  web: WebConsole | undefined;
  /** Whether messages are taken (lifecycle). */
  accepting: boolean;
  /** Routes the channels' button presses to their handlers (approvals, /reset). */
  readonly choices: ChoiceRouter;
  /** Albums whose items were recorded one by one, until each runs as one message. */
  readonly albums: AlbumGatherer;
  /** Turns kept while the PostgreSQL store did not answer, until it does (docs/store.md). */
  readonly kept: KeptTurns;
  /** Each profile's task scheduler, once started (schedules-start). */
  readonly schedulers: Map<string, TaskScheduler>;
  /**
   * Scheduled runs recovery ran again, by profile and task id, until they end: each profile's
   * scheduler adopts them at its start, so they never overlap a new run (scheduled-runs).
   */
  readonly recoveredRuns: Map<string, RecoveredRun[]>;
  /** Which replica runs each session (docs/cluster.md); absent with SQLite. */
  readonly replicas: ReplicaLoop | undefined;
}

/** A scheduled run recovery ran again, waiting for its profile's scheduler to adopt it. */
export interface RecoveredRun {
  readonly taskId: string;
  readonly dueMs: number;
  readonly run: SubmittedRun;
}

/** The replicas' loop as the gateway's lifecycle drives it (replica-sessions.ts). */
export interface ReplicaLoop {
  /**
   * Before the start-up recovery: binds `gateway`, so the turns that recovery dispatches keep
   * their session's order as every later turn does, and removes this replica's containers of
   * slots that moved to another replica while it was down (files kept). Never rejects.
   */
  prepare(gateway: GatewayCore): Promise<void>;
  /** Starts it, after the start-up recovery. */
  start(gateway: GatewayCore): void;
  /** The stop begins: no new work from the cluster; leases still renewed while turns drain. */
  quiesce(): void;
  /**
   * The stop drained its turns and the sandboxes are about to close: the slots' pins go to the
   * other replicas (docs/cluster.md, "Sandboxes across replicas"). Never rejects.
   */
  releaseSlots(): Promise<void>;
  /** Ends it and hands every session over. Never rejects. */
  stop(): Promise<void>;
  /** How many sessions this replica holds now (the registry's `sessions held`). */
  sessionsHeld(): number;
}

/** The channel of a profile on a platform, if it is configured. */
export function channelFor(
  gateway: { readonly channels: readonly ChannelAdapter[] },
  profile: string,
  platform: Platform,
): ChannelAdapter | undefined {
  return gateway.channels.find((c) => c.profile === profile && c.platform === platform);
}

/** Counts `work` in `gateway.inFlight` until it settles; a rejection is logged. */
export function track(gateway: GatewayCore, work: Promise<unknown>): void {
  const done: Promise<void> = work
    .then(() => undefined)
    .catch((error: unknown) => gateway.logger.error({ err: error }, "background work failed"))
    .finally(() => gateway.inFlight.delete(done));
  gateway.inFlight.add(done);
}

/** Where a reply to `message` goes (a scheduled run's quotes nothing: no message is behind it). */
export function targetOf(message: InboundMessage): ChatTarget {
  return {
    platform: message.platform,
    chatId: message.chatId,
    threadId: message.threadId,
    ...(message.scheduled === undefined ? { replyToMessageId: message.messageId } : {}),
  };
}
