import type { Sleep } from "@mediagate/io";
import type { Logger } from "pino";
import type { BotLeadership } from "../../cluster/leader-lease.js";
import { type MenuOffer, PlainOffer } from "../../commands/menu.js";
import { Defaults } from "../../defaults.js";
import { type RetryOptions, resolveRetryOptions } from "../../delivery/retry.js";
import type { TelegramCommandOptions } from "./commands.js";
import type { AmbiguousSends } from "./errors.js";
import type { GroupRules } from "./inbound.js";
import { PollingDefaults, type PollingSettings } from "./polling.js";
import type { CallerSettings } from "./sender.js";
import {
  resolveWebhookSettings,
  type TelegramWebhookOptions,
  type WebhookSettings,
} from "./webhook-settings.js";

/** Options of {@link TelegramChannel}. */
export type { BotLeadership };

export interface TelegramChannelOptions {
  /** The bot token (BotFather). Never logged. */
  readonly token: string;
  /** Bot API server root without trailing slash; default `https://api.telegram.org`. */
  readonly apiRoot?: string | undefined;
  /** The profile this bot serves; stamped on every inbound message. */
  readonly profile: string;
  readonly logger: Logger;
  /**
   * Upload caps; raise them for a local Bot API server (default @mediagate/media's
   * `TelegramDefaults`).
   */
  readonly limits?:
    | { readonly photoBytes?: number | undefined; readonly otherBytes?: number | undefined }
    | undefined;
  /** Retry policy (docs/media.md); default `Defaults.retry`. */
  readonly retry?: RetryOptions | undefined;
  /**
   * Drop updates that queued up while the gateway was down. Default `false`: Telegram keeps
   * them for 24 h and a restart should not lose what people wrote meanwhile.
   */
  readonly dropPendingUpdates?: boolean | undefined;
  /**
   * A send that may have reached Telegram but got no answer (reset after sending, 5xx,
   * timeout): `at-most-once` (default) does not resend it, `at-least-once` does and may post
   * it twice (docs/durability.md).
   */
  readonly ambiguousSends?: AmbiguousSends | undefined;
  /**
   * Every Bot API request's time before its upload size is counted. Default:
   * `Defaults.telegram.requestTimeoutBaseMs`.
   */
  readonly requestTimeoutBaseMs?: number | undefined;
  /**
   * The slowest upload waited for: a request may take `requestTimeoutBaseMs` + its bytes /
   * this. Default: `Defaults.telegram.minUploadBytesPerSecond`.
   */
  readonly minUploadBytesPerSecond?: number | undefined;
  /** Long-poll `timeout` of getUpdates. Default: `Defaults.telegram.pollTimeoutSeconds`. */
  readonly pollTimeoutSeconds?: number | undefined;
  /**
   * A getUpdates unanswered this long past its timeout is abandoned and retried. Default:
   * `Defaults.telegram.pollTimeoutMarginMs`.
   */
  readonly pollTimeoutMarginMs?: number | undefined;
  /**
   * First wait after a failed poll (or an update that could not be recorded). Default:
   * `Defaults.telegram.pollBackoffMinMs`.
   */
  readonly pollBackoffMinMs?: number | undefined;
  /**
   * Cap of that wait, which doubles per failure in a row. Default:
   * `Defaults.telegram.pollBackoffMaxMs`.
   */
  readonly pollBackoffMaxMs?: number | undefined;
  /**
   * When a getUpdates answer ends inside an album, the wait before one more poll collects its
   * other messages. Default: `Defaults.telegram.albumWaitMs`.
   */
  readonly albumWaitMs?: number | undefined;
  /**
   * Largest file a user may send that is fetched (default `Defaults.telegram.downloadMaxBytes`,
   * the public getFile limit).
   */
  readonly downloadMaxBytes?: number | undefined;
  /**
   * The Bot API server runs with `--local`: getFile answers an absolute path on this host,
   * read from disk instead of downloaded. Default `false`.
   */
  readonly localFiles?: boolean | undefined;
  /**
   * Which group and supergroup messages are answered (docs/sessions.md, "Groups"):
   * `requireMention` (default true) answers only messages addressed to the bot;
   * `allowedChats`, when set, ignores every other group.
   */
  readonly groups?:
    | {
        readonly requireMention?: boolean | undefined;
        readonly allowedChats?: readonly (string | number)[] | undefined;
      }
    | undefined;
  /**
   * Messages a reply's text may take (`delivery.maxTextChunks`, default
   * `Defaults.delivery.maxTextChunks`); a longer reply is sent as that many messages of its
   * head and the whole as `reply.txt` (docs/media.md).
   */
  readonly maxTextChunks?: number | undefined;
  /**
   * The command menus (docs/sessions.md, "Command menus"): `register` (default true) sets them
   * with `setMyCommands` at start-up; `adminChatIds` get the admin commands in their menu.
   */
  readonly commands?: TelegramCommandOptions | undefined;
  /** The wait between polls after a failure, and before completing an album (tests pass a quick one). */
  readonly sleep?: Sleep | undefined;
  /**
   * Receive updates by webhook instead of long polling (docs/telegram-webhooks.md). Absent:
   * long polling, and a webhook left set is deleted at start.
   */
  readonly webhook?: TelegramWebhookOptions | undefined;
  /**
   * Long polling in a cluster (docs/cluster.md): polls only while this replica holds the bot's
   * lease. Absent: polls from the start.
   */
  readonly leader?: BotLeadership | undefined;
}

/** Defaults of {@link TelegramChannelOptions}. */
export const TelegramChannelDefaults = {
  apiRoot: Defaults.telegram.apiRoot,
  dropPendingUpdates: Defaults.telegram.dropPendingUpdates,
  ambiguousSends: Defaults.delivery.ambiguousSends,
  requestTimeoutBaseMs: Defaults.telegram.requestTimeoutBaseMs,
  minUploadBytesPerSecond: Defaults.telegram.minUploadBytesPerSecond,
  pollTimeoutSeconds: PollingDefaults.pollTimeoutSeconds,
  pollTimeoutMarginMs: PollingDefaults.pollTimeoutMarginMs,
  pollBackoffMinMs: PollingDefaults.pollBackoffMinMs,
  pollBackoffMaxMs: PollingDefaults.pollBackoffMaxMs,
  albumWaitMs: PollingDefaults.albumWaitMs,
  downloadMaxBytes: Defaults.telegram.downloadMaxBytes,
  localFiles: Defaults.telegram.localFiles,
  maxTextChunks: Defaults.delivery.maxTextChunks,
} as const satisfies Partial<TelegramChannelOptions>;

/** {@link TelegramChannelOptions} with defaults applied and checked. */
export interface ResolvedTelegramOptions {
  readonly apiRoot: string;
  readonly dropPendingUpdates: boolean;
  readonly downloadMaxBytes: number;
  readonly localFiles: boolean;
  readonly groups: GroupRules;
  readonly maxTextChunks: number;
  readonly commands: {
    readonly register: boolean;
    readonly adminChatIds: readonly string[];
    readonly offer: MenuOffer;
  };
  readonly caller: CallerSettings;
  readonly polling: PollingSettings;
  readonly webhook: WebhookSettings | undefined;
}

/** Applies the defaults once and checks the values; a bad one throws a RangeError naming it. */
export function resolveTelegramOptions(options: TelegramChannelOptions): ResolvedTelegramOptions {
  const settings = { ...TelegramChannelDefaults, ...definedOnly(options) };
  if (settings.ambiguousSends !== "at-most-once" && settings.ambiguousSends !== "at-least-once") {
    throw new RangeError(
      `TelegramChannel: ambiguousSends must be "at-most-once" or "at-least-once", got ${String(settings.ambiguousSends)}`,
    );
  }
  positive("requestTimeoutBaseMs", settings.requestTimeoutBaseMs);
  positive("minUploadBytesPerSecond", settings.minUploadBytesPerSecond);
  positive("pollTimeoutSeconds", settings.pollTimeoutSeconds);
  positive("pollBackoffMinMs", settings.pollBackoffMinMs);
  positive("pollBackoffMaxMs", settings.pollBackoffMaxMs);
  positive("downloadMaxBytes", settings.downloadMaxBytes);
  if (!Number.isInteger(settings.maxTextChunks) || settings.maxTextChunks < 1) {
    throw new RangeError(
      `TelegramChannel: maxTextChunks must be a whole number >= 1, got ${settings.maxTextChunks}`,
    );
  }
  if (!Number.isFinite(settings.albumWaitMs) || settings.albumWaitMs < 0) {
    throw new RangeError(
      `TelegramChannel: albumWaitMs must be a number >= 0, got ${settings.albumWaitMs}`,
    );
  }
  if (!Number.isFinite(settings.pollTimeoutMarginMs) || settings.pollTimeoutMarginMs < 0) {
    throw new RangeError(
      `TelegramChannel: pollTimeoutMarginMs must be a number >= 0, got ${settings.pollTimeoutMarginMs}`,
    );
  }
  const allowedChats = options.groups?.allowedChats;
  for (const id of allowedChats ?? []) {
    if (!/^-?\d+$/.test(String(id))) {
      throw new RangeError(
        `TelegramChannel: groups.allowedChats holds chat ids (digits, negative for groups), got ${String(id)}`,
      );
    }
  }
  return {
    apiRoot: settings.apiRoot.replace(/\/+$/, ""),
    groups: {
      requireMention: options.groups?.requireMention ?? Defaults.telegram.groups.requireMention,
      ...(allowedChats === undefined ? {} : { allowedChats: new Set(allowedChats.map(String)) }),
      agent: (options.commands?.offer ?? PlainOffer).agent,
    },
    dropPendingUpdates: settings.dropPendingUpdates,
    downloadMaxBytes: settings.downloadMaxBytes,
    localFiles: settings.localFiles,
    maxTextChunks: settings.maxTextChunks,
    commands: {
      register: options.commands?.register ?? Defaults.commandMenus.register,
      adminChatIds: options.commands?.adminChatIds ?? [],
      offer: options.commands?.offer ?? PlainOffer,
    },
    caller: {
      retry: resolveRetryOptions(options.retry),
      ambiguousSends: settings.ambiguousSends,
      requestTimeoutBaseMs: settings.requestTimeoutBaseMs,
      minUploadBytesPerSecond: settings.minUploadBytesPerSecond,
    },
    polling: {
      pollTimeoutSeconds: settings.pollTimeoutSeconds,
      pollTimeoutMarginMs: settings.pollTimeoutMarginMs,
      pollBackoffMinMs: settings.pollBackoffMinMs,
      pollBackoffMaxMs: settings.pollBackoffMaxMs,
      albumWaitMs: settings.albumWaitMs,
      sleep: options.sleep ?? PollingDefaults.sleep,
    },
    webhook: options.webhook === undefined ? undefined : resolveWebhookSettings(options.webhook),
  };
}

/** The options that are set (so an explicit `undefined` does not override a default). */
function definedOnly<T extends object>(options: T): { [K in keyof T]?: Exclude<T[K], undefined> } {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as {
    [K in keyof T]?: Exclude<T[K], undefined>;
  };
}

function positive(name: string, value: number): void {
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`TelegramChannel: ${name} must be a number > 0, got ${value}`);
  }
}
