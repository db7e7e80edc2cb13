import type { SandboxSettings } from "@mediagate/sandbox";

/** Telegram settings of a profile, tokens resolved (config, then env override). */
export interface TelegramSettings {
  readonly token: string;
  readonly apiRoot?: string | undefined;
  readonly photoMaxBytes?: number | undefined;
  readonly uploadMaxBytes?: number | undefined;
}

/** Discord settings of a profile. `channels` restricts guild channels served (empty: all). */
export interface DiscordSettings {
  readonly token: string;
  readonly apiRoot?: string | undefined;
  readonly gatewayUrl?: string | undefined;
  readonly channels: readonly string[];
  readonly uploadMaxBytes?: number | undefined;
}

/** Which agent answers a profile's messages (docs/sessions.md). */
export type AgentSettings =
  | { readonly kind: "shell" }
  | {
      readonly kind: "openai";
      readonly baseUrl: string;
      readonly apiKey: string;
      readonly model: string;
      readonly maxToolRounds: number;
    };

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
  readonly agent: AgentSettings;
  readonly sandbox: SandboxSettings;
  readonly media: { readonly allowDirs: readonly string[] };
  readonly groupSessionsPerUser: boolean;
  readonly threadSessionsPerUser: boolean;
  readonly stillWorkingAfterSeconds: number;
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
}
