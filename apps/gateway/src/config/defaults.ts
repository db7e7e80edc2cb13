import { Defaults as SandboxDefaults } from "@mediagate/sandbox";

/**
 * Embedded defaults of the configuration (README.md): with no config file at all the gateway
 * runs the default profile with the shell agent in a Docker sandbox.
 */
export const ConfigDefaults = {
  profileName: "default",
  concurrency: 4,
  agentKind: "shell",
  openaiMaxToolRounds: 8,
  groupSessionsPerUser: true,
  threadSessionsPerUser: false,
  /** Seconds a turn may run before the chat gets a one-time "still working…" message. */
  stillWorkingAfterSeconds: 60,
  /** How long a stop lets running turns and deliveries finish before cutting them off. */
  drainTimeoutSeconds: 15,
  /** docs/durability.md: what happens to sends whose outcome is unknown, and the outbox caps. */
  delivery: {
    ambiguousSends: "at-most-once",
    maxAttempts: 8,
    maxAgeSeconds: 6 * 60 * 60,
  },
  /** Re-run a turn a crash cut off (off: its chat gets a notice; commands are not idempotent). */
  rerunInterrupted: false,
  /** Root home below the user's home directory when neither config nor env sets one. */
  homeDirName: ".mediagate",
  /** The sandbox package's own defaults, plus the image the gateway builds on first start. */
  sandbox: { ...SandboxDefaults.settings, image: "mediagate-sandbox:local" },
} as const;

/** Profile names: lowercase letters, digits, `_` and `-`, starting with a letter or digit. */
export const ProfileNamePattern = /^[a-z0-9][a-z0-9_-]*$/;
