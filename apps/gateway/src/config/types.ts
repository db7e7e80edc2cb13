import type { SandboxSettings } from "@mediagate/sandbox";
import type { TelegramWebhookOptions } from "../channels/telegram/webhook-settings.js";
import type { TextFormat } from "../channels/types.js";
import type { LogLevel } from "../log.js";

/** Telegram settings of a profile, tokens resolved (config, then env override). */
export interface TelegramSettings {
  readonly token: string;
  readonly apiRoot?: string | undefined;
  readonly photoMaxBytes?: number | undefined;
  readonly uploadMaxBytes?: number | undefined;
  /** Long-poll timeout of `getUpdates` (default `Defaults.telegram.pollTimeoutSeconds`). */
  readonly pollTimeoutSeconds?: number | undefined;
  /**
   * Largest file a user may send (default `Defaults.telegram.downloadMaxBytes`, the public Bot
   * API's `getFile` limit).
   */
  readonly downloadMaxBytes?: number | undefined;
  /**
   * A local Bot API server (`--local`): `getFile` answers an absolute path on this host, read
   * from disk; `downloadMaxBytes` is then the only limit (docs/inbound-media.md).
   */
  readonly localFiles?: boolean | undefined;
  /** Which group messages are answered (docs/sessions.md, "Groups"). */
  readonly groups: TelegramGroupSettings;
  /** The command menus (docs/sessions.md, "Command menus"). */
  readonly commands: CommandMenuSettings;
  /** Webhook mode instead of long polling (docs/telegram-webhooks.md); absent: polling. */
  readonly webhook?: TelegramWebhookOptions | undefined;
}

/** `telegram.commands` / `discord.commands`, defaults applied. */
export interface CommandMenuSettings {
  /**
   * Register the command menus at start-up (default true); false leaves the bot's menus as
   * they are, for a bot whose command names another program owns.
   */
  readonly register: boolean;
}

/** `telegram.groups`, defaults applied. */
export interface TelegramGroupSettings {
  /** Answer only messages addressed to the bot (mention, reply, `/cmd@bot`); default true. */
  readonly requireMention: boolean;
  /** The only groups answered (chat ids as strings); absent: every group. */
  readonly allowedChats?: readonly string[] | undefined;
}

/** Discord settings of a profile. `channels`: guild channels answered without a mention. */
export interface DiscordSettings {
  readonly token: string;
  readonly apiRoot?: string | undefined;
  readonly gatewayUrl?: string | undefined;
  readonly channels: readonly string[];
  /**
   * The only guild channels answered (their threads, and `channels`, too); absent: every
   * channel of every guild. DMs are not affected.
   */
  readonly allowedChannels?: readonly string[] | undefined;
  readonly uploadMaxBytes?: number | undefined;
  /**
   * Largest attachment a user may send that is saved (default `Defaults.discord.downloadMaxBytes`).
   */
  readonly downloadMaxBytes?: number | undefined;
  /**
   * Messages fetched per chat after a restart (default `Defaults.discord.catchUpMaxMessages`;
   * 0 turns catch-up off).
   */
  readonly catchUpMaxMessages?: number | undefined;
  /** The slash commands (docs/sessions.md, "Command menus"). */
  readonly commands: CommandMenuSettings;
}

/**
 * What makes an action ask first (docs/approvals.md, "Rules"): any rule that matches asks.
 * Heuristics over a command's words, not a security boundary.
 */
export interface ApprovalRules {
  /** Regular expressions (case-insensitive) tested against each command line. */
  readonly commands?: readonly string[] | undefined;
  /** A write_file outside /workspace, or a command whose words write or `cd` outside it. */
  readonly writesOutsideWorkspace?: boolean | undefined;
  /** A command naming a network program (curl, git, pip, …) or a URL. */
  readonly network?: boolean | undefined;
  /** A write_file of more than this many bytes (commands' writes are not measured). */
  readonly filesOverBytes?: number | undefined;
}

/** `agent.approvals` (docs/approvals.md): which actions wait for a yes, who gives it, how long. */
export interface ApprovalSettings {
  readonly ask: "never" | "always" | ApprovalRules;
  readonly approvers: "sender" | "admins";
  readonly expiresSeconds: number;
}

/** Which agent answers a profile's messages (docs/sessions.md). */
export type AgentSettings =
  | {
      readonly kind: "shell";
      /** Actions that ask an approver first (docs/approvals.md); absent: `never`. */
      readonly approvals?: ApprovalSettings | undefined;
      /**
       * The command output a reply keeps, in chars (the tail; default
       * `Defaults.shellAgent.maxReplyChars`). Raise it to get long outputs whole: past
       * `delivery.maxTextChunks` messages they come as `reply.txt`.
       */
      readonly maxReplyChars?: number | undefined;
    }
  | {
      readonly kind: "openai";
      /** Tool calls that ask an approver first (docs/approvals.md); absent: `never`. */
      readonly approvals?: ApprovalSettings | undefined;
      /**
       * The named model endpoints (docs/models-and-usage.md); the old single-model form
       * (`baseUrl`, `model`, `apiKey`) is read as a one-entry list named after its model.
       */
      readonly models: readonly ModelSettings[];
      /** The entry a session uses until `/model` picks another (default: the first). */
      readonly defaultModel: string;
      /** Tried in order after the session's model fails (5xx, timeout, 429 past its bound). */
      readonly fallback: readonly string[];
      /** The models a member (not an admin) may pick with `/model`; absent: every one. */
      readonly memberModels?: readonly string[] | undefined;
      /** The profile's daily spending limit (UTC days); absent: none. */
      readonly budget?: BudgetSettings | undefined;
      readonly maxToolRounds: number;
      /** Extra instructions, appended to the gateway's own system prompt. */
      readonly systemPrompt?: string | undefined;
      /** Images a user sends are also given to the model as image inputs. */
      readonly vision?: boolean | undefined;
      /** Voice notes and audio are transcribed here and the transcript added to the turn. */
      readonly transcription?: TranscriptionSettings | undefined;
    };

/** One entry of `agent.models`: an OpenAI-compatible chat-completions endpoint and model. */
export interface ModelSettings {
  /** What `/model` and usage reports call it. */
  readonly name: string;
  readonly baseUrl: string;
  /** Sent as a bearer token; absent for a local server that needs none (no header sent). */
  readonly apiKey?: string | undefined;
  /** The model id the endpoint serves. */
  readonly model: string;
  /** The model's context window in tokens; see `contextTokensOf` (agents/models.ts). */
  readonly contextTokens?: number | undefined;
  /** Prices per million tokens (any currency; reports call it cost); absent: cost 0. */
  readonly prices?: ModelPrices | undefined;
  /** Time limit of one request (default `Defaults.openaiAgent.timeoutMs`). */
  readonly timeoutMs?: number | undefined;
}

/** Prices per million tokens. `cachedInput` defaults to `input`. */
export interface ModelPrices {
  readonly input: number;
  readonly output: number;
  readonly cachedInput?: number | undefined;
}

/** `agent.budget`: new model calls stop for the day once either limit is reached. */
export interface BudgetSettings {
  /** Input plus output tokens per UTC day, all sessions of the profile together. */
  readonly dailyTokens?: number | undefined;
  /** Cost per UTC day (from the configured prices), all sessions of the profile together. */
  readonly dailyCost?: number | undefined;
}

/** An OpenAI-compatible `/audio/transcriptions` endpoint (docs/inbound-media.md). */
export interface TranscriptionSettings {
  readonly baseUrl: string;
  readonly model: string;
  readonly apiKey?: string | undefined;
}

/**
 * What a message that arrives while its session's turn runs does (docs/sessions.md): wait its
 * turn, stop the running turn and go next, or join the other waiting messages in one turn.
 */
export type BusyMode = "queue" | "interrupt" | "collect";

/** The live status message of a long turn (docs/sessions.md, "Live progress"). */
export interface ProgressSettings {
  /** Off: the chat gets the one-time "still working" message instead. */
  readonly enabled: boolean;
  /** How long a turn runs before its status message is posted. */
  readonly afterSeconds: number;
  /** The status message is edited at most this often (never more than once a second). */
  readonly everySeconds: number;
}

/** Status reactions on the users' messages (docs/sessions.md, "Status reactions"). */
export interface ReactionSettings {
  /** Off: no reactions anywhere. */
  readonly enabled: boolean;
  /** On: also in groups, supergroups, channels and guild channels (not only private chats). */
  readonly groups: boolean;
  /**
   * 👀 and 👨‍💻 show only once the message was accepted this long ago, so a message answered
   * sooner gets no reaction (👎 alone if it failed); 0: at once.
   */
  readonly afterMs: number;
}
/**
 * How a reply shows while the agent writes it (docs/streaming.md): `auto` picks `draft` in
 * Telegram private chats and `edit` elsewhere; `off` shows the reply once it is complete.
 */
export type StreamSetting = "off" | "draft" | "edit" | "auto";

/** Who may use a profile (docs/security.md): the config's lists only, or pairing too. */
export type AccessMode = "allowlist" | "pairing";

/** `pairing`, defaults applied (docs/security.md, "Pairing"). */
export interface PairingSettings {
  readonly codeTtlSeconds: number;
  readonly maxPendingCodes: number;
  readonly maxFailedApprovals: number;
  readonly lockSeconds: number;
}

/** One validated profile with every default applied and its home resolved. */
export interface ProfileConfig {
  readonly name: string;
  /** `<root>` for the profile named `default`, `<root>/profiles/<name>` otherwise (docs/sandbox.md). */
  readonly home: string;
  readonly telegram?: TelegramSettings | undefined;
  readonly discord?: DiscordSettings | undefined;
  /** `<platform>:<id>` entries; empty means nobody (admins are allowed too). */
  readonly allowedUsers: readonly string[];
  readonly admins: readonly string[];
  /**
   * `allowlist`: only `allowedUsers` and `admins`. `pairing`: also the users an admin approved
   * (a one-time code an unknown user gets in a DM), kept in the profile's state database.
   */
  readonly access: AccessMode;
  readonly pairing: PairingSettings;
  readonly agent: AgentSettings;
  /**
   * How replies are shown (docs/formatting.md); default by agent: `markdown` for `openai`,
   * `plain` for `shell` (`Defaults.render.format`).
   */
  readonly format: TextFormat;
  readonly sandbox: SandboxSettings;
  readonly media: { readonly allowDirs: readonly string[] };
  readonly groupSessionsPerUser: boolean;
  readonly threadSessionsPerUser: boolean;
  readonly stillWorkingAfterSeconds: number;
  readonly busyMode: BusyMode;
  /** Messages that may wait per session behind its running turn; more are refused. */
  readonly maxQueuedMessages: number;
  readonly progress: ProgressSettings;
  readonly reactions: ReactionSettings;
  readonly stream: StreamSetting;
  /** Scheduled tasks: the zone, the limits and the operator's tasks (docs/schedules.md). */
  readonly schedules: ScheduleSettings;
}

/** `schedules` of a profile (docs/schedules.md), with the `Defaults.schedules` filled in. */
export interface ScheduleSettings {
  /** IANA zone of cron patterns and `/at` times. */
  readonly timezone: string;
  /** Zones of single users (`<platform>:<id>` → IANA zone), over `timezone`. */
  readonly userTimezones: Readonly<Record<string, string>>;
  readonly maxPerUser: number;
  readonly maxPerProfile: number;
  readonly minIntervalSeconds: number;
  readonly runTimeoutSeconds: number;
  readonly catchUp: "once" | "skip";
  readonly tasks: readonly OperatorTaskSettings[];
}

/** One task of `schedules.tasks`: the operator's, run in its `chat`. */
export interface OperatorTaskSettings {
  readonly name: string;
  /** `every` in ms, a five-field `cron` pattern, or a one-time `at` (`YYYY-MM-DD HH:MM`). */
  readonly timing:
    | { readonly kind: "every"; readonly everyMs: number }
    | { readonly kind: "cron"; readonly pattern: string }
    | { readonly kind: "at"; readonly at: string };
  readonly text: string;
  readonly chat: {
    readonly platform: "telegram" | "discord";
    readonly chatId: string;
    readonly chatType: "dm" | "group" | "channel";
    readonly threadId?: string | undefined;
  };
  readonly catchUp: "once" | "skip";
  readonly timezone: string;
}

/** What happens to replies (docs/durability.md). */
export interface DeliverySettings {
  /**
   * A send whose outcome is unknown (the connection broke after the request went out, a 5xx):
   * `at-most-once` does not resend it (it may be missing), `at-least-once` resends it (it may
   * arrive twice). Discord needs neither: its nonces make a resend harmless.
   */
  readonly ambiguousSends: "at-most-once" | "at-least-once";
  /** Delivery attempts of one reply before it is given up (and its chat told). */
  readonly maxAttempts: number;
  /** A reply still undelivered after this long is given up. */
  readonly maxAgeSeconds: number;
  /**
   * Messages a reply's text may take on Telegram and Discord; past it the head is sent as
   * that many messages and the whole reply as `reply.txt` (docs/media.md, "Long replies").
   */
  readonly maxTextChunks: number;
}

/** The whole validated configuration. */
export interface GatewayConfig {
  /** Root home (`$MEDIAGATE_HOME`, default `~/.mediagate`); the default profile's home. */
  readonly home: string;
  /** Config file it was read from, if any (for messages). */
  readonly source?: string | undefined;
  /** Global cap on agent turns running at once, across sessions and profiles. */
  readonly concurrency: number;
  /** At least one profile; the first is the primary profile (env token overrides, console). */
  readonly profiles: readonly ProfileConfig[];
  /** `DOCKER_HOST`, when set. */
  readonly dockerHost?: string | undefined;
  /** How long a stop lets running turns and deliveries finish before cutting them off. */
  readonly drainTimeoutSeconds: number;
  readonly delivery: DeliverySettings;
  /** Re-run turns a crash cut off instead of telling their chat (off by default). */
  readonly rerunInterrupted: boolean;
  /** The health endpoint's `host:port` (loopback); off when absent. */
  readonly healthListen?: string | undefined;
  /**
   * The web console (docs/web-console.md): its `host:port`, and the `Host` names it answers
   * besides the loopback names and the listen host; off when absent. `web: {}` in the file
   * listens on `ConfigDefaults.webListen`.
   */
  readonly web?:
    | { readonly listen: string; readonly allowedHosts?: readonly string[] | undefined }
    | undefined;
  /** `log.level` of the file, when set (`LOG_LEVEL` overrides it: docs/operations.md). */
  readonly logLevel?: LogLevel | undefined;
  /** Where the journal and the profiles' state live (docs/store.md); `sqlite` by default. */
  readonly store: StoreSettings;
  /** This replica among those sharing a PostgreSQL store (docs/cluster.md); ignored on SQLite. */
  readonly cluster?: ClusterSettings | undefined;
}

/** `cluster:` (docs/cluster.md). */
export interface ClusterSettings {
  /** This replica's id; unset: generated once and kept in the home's `replica-id` file. */
  readonly replicaId?: string | undefined;
  /**
   * An absolute directory on storage every replica sees, where persistent and `shared:` slots
   * keep their files, so they move with the slot's pin. Unset: in each replica's own home, and
   * a pin that moves leaves them behind (docs/cluster.md, "Sandboxes across replicas").
   */
  readonly slotsDir?: string | undefined;
}

/**
 * `store:` (docs/store.md): the SQLite files in the homes (the default), or one PostgreSQL
 * database. `url` is a secret (it carries the password): redacted from every message and log.
 * Unset limits take `Defaults.postgres`.
 */
export type StoreSettings =
  | { readonly kind: "sqlite" }
  | {
      readonly kind: "postgres";
      readonly url: string;
      readonly maxConnections?: number | undefined;
      readonly statementTimeoutMs?: number | undefined;
      readonly queryTimeoutMs?: number | undefined;
      readonly connectTimeoutMs?: number | undefined;
      readonly idleTimeoutMs?: number | undefined;
    };
