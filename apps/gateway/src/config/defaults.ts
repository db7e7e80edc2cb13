import { Defaults as SandboxDefaults } from "@mediagate/sandbox/defaults";
import type { AmbiguousSends } from "../channels/telegram/errors.js";
import type { TextFormat } from "../channels/types.js";
import { Defaults } from "../defaults.js";
import type { AccessMode, AgentSettings, BusyMode, StreamSetting } from "./types.js";

/**
 * Embedded defaults of the configuration (README.md): with no config file at all the gateway
 * runs the default profile with the shell agent in a Docker sandbox. Each value comes from
 * the package's one `Defaults` source, in the config's units.
 */
export const ConfigDefaults = {
  profileName: Defaults.profileName,
  concurrency: Defaults.concurrency,
  agentKind: Defaults.agentKind,
  openaiMaxToolRounds: Defaults.openaiAgent.maxToolRounds,
  groupSessionsPerUser: Defaults.sessions.groupSessionsPerUser,
  threadSessionsPerUser: Defaults.sessions.threadSessionsPerUser,
  stillWorkingAfterSeconds: Defaults.stillWorkingAfterSeconds,
  busyMode: Defaults.busy.mode satisfies BusyMode,
  format: Defaults.render.format satisfies Record<AgentSettings["kind"], TextFormat>,
  maxQueuedMessages: Defaults.busy.maxQueuedMessages,
  progress: {
    enabled: Defaults.progress.enabled,
    afterSeconds: Defaults.progress.afterSeconds,
    everySeconds: Defaults.progress.everySeconds,
  },
  reactions: {
    enabled: Defaults.reactions.enabled,
    groups: Defaults.reactions.groups,
    afterMs: Defaults.reactions.afterMs,
  },
  stream: Defaults.stream satisfies StreamSetting,
  telegramGroups: Defaults.telegram.groups,
  registerCommands: Defaults.commandMenus.register,
  access: Defaults.access satisfies AccessMode,
  pairing: Defaults.pairing,
  drainTimeoutSeconds: Defaults.drainTimeoutSeconds,
  delivery: {
    ambiguousSends: Defaults.delivery.ambiguousSends satisfies AmbiguousSends,
    maxAttempts: Defaults.delivery.maxAttempts,
    maxAgeSeconds: Defaults.delivery.maxAgeSeconds,
    maxTextChunks: Defaults.delivery.maxTextChunks,
  },
  rerunInterrupted: Defaults.rerunInterrupted,
  webListen: Defaults.web.listen,
  homeDirName: Defaults.homeDirName,
  /** The sandbox package's own defaults, plus the image the gateway builds on first start. */
  sandbox: { ...SandboxDefaults.settings, image: "mediagate-sandbox:local" },
} as const;

/** Profile names: lowercase letters, digits, `_` and `-`, starting with a letter or digit. */
export const ProfileNamePattern = /^[a-z0-9][a-z0-9_-]*$/;
