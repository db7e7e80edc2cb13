import type { Clock, Schedule, Sleep } from "@mediagate/io";
import type { DockerEngine, InstanceId } from "@mediagate/sandbox";
import type { Agent } from "../agents/types.js";
import type { SharedTerminal } from "../channels/console-terminal.js";
import type { ChannelAdapter } from "../channels/types.js";
import type { ProfileConfig } from "../config/types.js";
import { Defaults } from "../defaults.js";
import type { OutboxOptions } from "../durable/outbox.js";
import type { Logger } from "../log.js";
import type { Redactor } from "../redact.js";
import type { StateStore } from "../state/state-store.js";
import type { ProgressClock } from "../turn-progress/progress.js";
import type { LogRing } from "../web/log-ring.js";

/** Defaults of `Gateway`. */
export const GatewayDefaults = {
  ...Defaults.gateway,
  drainTimeoutMs: Defaults.drainTimeoutSeconds * 1000,
} as const;

/** Options of `Gateway.create`. */
export interface GatewayOptions {
  readonly logger?: Logger;
  /**
   * What the health endpoint's answers and the web console's failures go through (the CLI's,
   * which knows every secret of the environment and the config); default one that knows the
   * config's secrets.
   */
  readonly redactor?: Redactor;
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
  /**
   * Replaces the wall clock of the journal (its recorded times, its pruning by age) and the
   * outbox, and the monotonic clock of the outbox's ages and the engine check's cache (default
   * `systemClock`; docs/durability.md, "Clock steps").
   */
  readonly clock?: Clock;
  /** Replaces the schedulers' timers (docs/schedules.md); tests fire them by hand. */
  readonly taskSchedule?: Schedule | undefined;
  /** Replaces the clock tasks are timed by (default `clock`); tests move it by hand. */
  readonly taskClock?: Clock | undefined;
  /**
   * The timers of the profiles' pairing refusal summaries (docs/security.md, "Pairing");
   * default real timers. Tests fire them by hand.
   */
  readonly refusalSchedule?: Schedule | undefined;
  /** Approvals' expiry timers (docs/approvals.md); default real timers. Tests fire them by hand. */
  readonly approvalSchedule?: Schedule | undefined;
  /** Replaces the outbox's timers (tests fire a long `retry_after` at once). */
  readonly outboxSchedule?: OutboxOptions["schedule"];
  /**
   * Replaces the timers of albums received item by item (`Defaults.telegram.webhookAlbumQuietMs`,
   * docs/telegram-webhooks.md); tests close an album's window by hand.
   */
  readonly albumSchedule?: Schedule | undefined;
  /** Replaces the replica heartbeat's timers (docs/cluster.md); tests fire them by hand. */
  readonly heartbeatSchedule?: Schedule | undefined;
  /** The version this replica registers with (default: the package's). */
  readonly version?: string | undefined;
  /**
   * The timer of the replicas' loop (renewing session leases, picking up handed and dead
   * replicas' work: docs/cluster.md); default a real timer. PostgreSQL only.
   */
  readonly replicaSchedule?: Schedule | undefined;
  /**
   * With `cluster.slotsDir`: how long a pinned slot is idle before its pin is released
   * (docs/cluster.md, "Slot pins"). Default `Defaults.slotPins.idleReleaseMs`; tests shorten it.
   */
  readonly slotIdleReleaseMs?: number | undefined;
  /**
   * Who this gateway is among replicas on one PostgreSQL store: its journal's owner and its
   * sessions' lease holder. Default `currentInstanceId()`; tests run several gateways in one
   * process with one each.
   */
  readonly instanceId?: InstanceId | undefined;
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
