/**
 * What the web console shows and does, as the gateway hands it over. The console never reaches
 * into the gateway: it asks a {@link ConsoleSource}, and every action goes through the
 * source, which takes the same code paths as the chat and CLI commands.
 */

/** One channel's state, as its health reports it. */
export interface ChannelView {
  readonly platform: string;
  readonly profile: string;
  /** `up`, `starting`, `retrying`, `failed`, `stopped`… as the channel reports it. */
  readonly state: string;
  /** Whether the console shows it as alive (`up`). */
  readonly alive: boolean;
  readonly sinceMs: number;
  readonly lastOkMs?: number | undefined;
  readonly detail?: string | undefined;
}

/** A recent warning or error of the log. */
export interface ErrorView {
  readonly timeMs: number;
  readonly level: string;
  readonly msg: string;
  readonly sessionKey?: string | undefined;
}

/** The cluster this gateway is a replica of, and its replicas (`replicas` absent: unreadable). */
export interface ClusterView {
  readonly id: string;
  /** This replica's id. */
  readonly replica: string;
  readonly replicas?:
    | readonly {
        readonly id: string;
        readonly host: string;
        readonly version: string;
        readonly sessionsHeld: number;
        /** Epoch ms of the last heartbeat. */
        readonly heartbeatMs: number;
        readonly heartbeatAgeMs: number;
        readonly state: string;
        readonly alive: boolean;
      }[]
    | undefined;
  readonly detail?: string | undefined;
}

/** The overview page. */
export interface OverviewView {
  readonly status: string;
  readonly channels: readonly ChannelView[];
  readonly engine: { readonly reachable: boolean; readonly detail?: string | undefined };
  readonly journal: { readonly writable: boolean; readonly detail?: string | undefined };
  /** The PostgreSQL store (absent with SQLite files): whether it answers, and how fast. */
  readonly store?:
    | {
        readonly where: string;
        readonly reachable: boolean;
        readonly roundTripMs?: number | undefined;
        readonly detail?: string | undefined;
        readonly downSinceMs?: number | undefined;
      }
    | undefined;
  /** The replicas sharing the PostgreSQL store (absent with SQLite files: docs/cluster.md). */
  readonly cluster?: ClusterView | undefined;
  readonly queue: { readonly running: number; readonly queued: number };
  readonly outbox: { readonly scheduled: number };
  /** Turns that ended in the last minute. */
  readonly turnsPerMinute: number;
  readonly recentErrors: readonly ErrorView[];
}

/** One session this process has seen. */
export interface SessionView {
  readonly sessionKey: string;
  readonly profile: string;
  readonly platform: string;
  readonly chat: string;
  readonly user: string;
  readonly slot: string;
  readonly lastActivityMs: number;
  /** `running`, `queued` or `idle`. */
  readonly state: "running" | "queued" | "idle";
  readonly queued: number;
  /** When its running turn started (epoch ms). */
  readonly turnStartedMs?: number | undefined;
  /** What the running turn does now: `$ command`, `reading /path`, … */
  readonly doing?: string | undefined;
}

/** One container of a profile. */
export interface ContainerView {
  readonly id: string;
  readonly profile: string;
  readonly slot: string;
  readonly state: string;
  readonly image: string;
  readonly createdMs: number;
  /** Bytes under the slot directory on the host; absent when it has none (tmpfs) or failed. */
  readonly diskBytes?: number | undefined;
  /** Processes in the container (running ones only). */
  readonly processes?: number | undefined;
  /** Its gateway process is gone (a scratch container) or it exited long ago: the reaper takes it. */
  readonly orphan: boolean;
  readonly orphanReason?: string | undefined;
}

/** One file of a reply, as planned. */
export type FileView =
  | {
      readonly status: "delivered" | "pending" | "failed";
      readonly index: number;
      readonly name: string;
      readonly kind: string;
      readonly mime: string;
      readonly size: number;
    }
  | { readonly status: "withheld"; readonly index: number; readonly reason: string }
  | {
      readonly status: "missing";
      readonly index: number;
      readonly path: string;
      readonly tried: readonly string[];
    }
  | {
      readonly status: "too_large";
      readonly index: number;
      readonly path: string;
      readonly size: number;
      readonly limit: number;
    };

/** One reply of the outbox. */
export interface DeliveryView {
  readonly id: string;
  readonly profile: string;
  readonly platform: string;
  readonly sessionKey: string;
  readonly createdMs: number;
  /** `pending`, `delivered` or `given_up`. */
  readonly state: string;
  readonly attempts: number;
  readonly lastError?: string | undefined;
  /** The reply's text as planned (tags removed), cut to a few hundred characters. */
  readonly text: string;
  readonly files: readonly FileView[];
}

/** One structured log line kept in memory. */
export interface LogView {
  readonly seq: number;
  readonly timeMs: number;
  readonly level: string;
  readonly msg: string;
  readonly sessionKey?: string | undefined;
  /** The line's other fields, as JSON (secrets already redacted by the logger). */
  readonly fields: string;
}

/** Which log lines to answer. */
export interface LogQuery {
  /** The least severe level to include (default `trace`: all). */
  readonly level?: string | undefined;
  /** Only lines of this session (a substring of the session key). */
  readonly session?: string | undefined;
  /** Only lines after this sequence number. */
  readonly after?: number | undefined;
  readonly limit?: number | undefined;
}

/** Who did something in the console (logged with every action). */
export interface WebActor {
  /** `web:<short session id>`. */
  readonly id: string;
  readonly address: string;
}

/** What `/reset` from the console answered. */
export type ResetAnswer =
  | { readonly status: "needs_confirm"; readonly text: string }
  | { readonly status: "done"; readonly text: string };

/** What changed. */
export type ChangeKind = "sessions" | "deliveries" | "logs" | "containers";

/** One scheduled task (the Tasks page, docs/schedules.md). */
export interface TaskView {
  readonly profile: string;
  readonly id: string;
  /** `<platform>:<id>` of its maker, or `operator` for a config task. */
  readonly owner: string;
  readonly ownerName?: string | undefined;
  /** How it is timed, as the chat shows it (`every 1h`, `cron "0 9 * * *" (Europe/Berlin)`). */
  readonly timing: string;
  readonly text: string;
  /** Where its runs answer, `<platform>:<chat id>`. */
  readonly chat: string;
  readonly state: "active" | "paused" | "done";
  /** Why the gateway paused it (its chat is gone for the bot); absent when a user paused it. */
  readonly pausedReason?: string | undefined;
  /** The next due time (epoch ms), while active. */
  readonly nextMs?: number | undefined;
  readonly lastRun?:
    | { readonly outcome: string; readonly dueMs: number; readonly atMs: number }
    | undefined;
}

/** What the Tasks page's buttons do. */
export type TaskActionName = "run" | "pause" | "resume";

/** One UTC day's model usage of a profile (the Usage page's bars). */
export interface UsageDayView {
  /** `YYYY-MM-DD`, UTC. */
  readonly day: string;
  readonly calls: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  readonly cost: number;
}

/** The Usage page: each profile's model calls per UTC day, the oldest day first, none missing. */
export interface UsageView {
  readonly profiles: readonly {
    readonly profile: string;
    readonly days: readonly UsageDayView[];
    /** The profile's daily budget, when it has one (a line on the charts). */
    readonly budget?: {
      readonly dailyTokens?: number | undefined;
      readonly dailyCost?: number | undefined;
    };
  }[];
}

/**
 * Where an approval stands (docs/approvals.md): `pending` until allowed (once or for the
 * session), denied, expired, cancelled (the turn ended first) or interrupted (the gateway
 * restarted while it waited).
 */
export type ApprovalState =
  | "pending"
  | "allowed"
  | "allowed_session"
  | "denied"
  | "expired"
  | "cancelled"
  | "interrupted";

/** One question the agent asked before acting, and its decision (the Approvals page). */
export interface ApprovalView {
  readonly id: string;
  readonly profile: string;
  readonly sessionKey: string;
  readonly platform: string;
  readonly chatId: string;
  /** `<platform>:<id>` of the person whose message started the turn. */
  readonly requester: string;
  /** What the agent wanted to do (`$ rm -rf build`, `write /etc/x (12 B)`). */
  readonly action: string;
  /** The rule that asked. */
  readonly reason: string;
  readonly status: ApprovalState;
  readonly createdMs: number;
  readonly expiresMs: number;
  /** `<platform>:<id>` of whoever decided; `timer` for an expiry, `gateway` for an end. */
  readonly decidedBy?: string | undefined;
  /** The decider's name as the platform gave it. */
  readonly decidedByName?: string | undefined;
  readonly decidedMs?: number | undefined;
}

/** The Approvals page: each profile's newest questions, newest first. */
export interface ApprovalsView {
  readonly approvals: readonly ApprovalView[];
}
