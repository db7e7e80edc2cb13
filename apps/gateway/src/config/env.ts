import { homedir } from "node:os";

/**
 * Every environment variable the gateway reads, typed. This module is the only place that
 * touches `process.env` (docs/architecture.md); everything else receives a {@link GatewayEnv}.
 * Empty strings count as unset.
 */
export interface GatewayEnv {
  /** `TELEGRAM_BOT_TOKEN`: overrides the primary profile's `telegram.token`. */
  readonly telegramBotToken?: string | undefined;
  /** `TELEGRAM_API_ROOT`: overrides the primary profile's `telegram.apiRoot`. */
  readonly telegramApiRoot?: string | undefined;
  /** `DISCORD_BOT_TOKEN`: overrides the primary profile's `discord.token`. */
  readonly discordBotToken?: string | undefined;
  /** `DISCORD_API_ROOT`: overrides the primary profile's `discord.apiRoot`. */
  readonly discordApiRoot?: string | undefined;
  /** `DISCORD_GATEWAY_URL`: overrides the primary profile's `discord.gatewayUrl`. */
  readonly discordGatewayUrl?: string | undefined;
  /** `DOCKER_HOST`: the Docker endpoint (`unix:///…`, `tcp://h:p`). */
  readonly dockerHost?: string | undefined;
  /** `MEDIAGATE_HOME`: root home when the config file sets no `home`. */
  readonly mediagateHome?: string | undefined;
  /** `MEDIAGATE_CONFIG`: config file path when `--config` is not given. */
  readonly mediagateConfig?: string | undefined;
  /** `LOG_LEVEL`: pino level, default `info`. */
  readonly logLevel?: string | undefined;
  /** The OS user's home directory; the root home defaults to `<userHome>/.mediagate`. */
  readonly userHome: string;
  /**
   * The whole environment, for `${VAR}` references in the config file (docs/configuration.md).
   * Only the config loader reads it.
   */
  readonly variables: Readonly<Record<string, string | undefined>>;
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value.trim() === "" ? undefined : value.trim();
}

/**
 * Reads the gateway's environment variables.
 * @param source the variables to read; defaults to `process.env` (tests pass their own).
 */
export function readEnv(source: NodeJS.ProcessEnv = process.env): GatewayEnv {
  return {
    telegramBotToken: nonEmpty(source.TELEGRAM_BOT_TOKEN),
    telegramApiRoot: nonEmpty(source.TELEGRAM_API_ROOT),
    discordBotToken: nonEmpty(source.DISCORD_BOT_TOKEN),
    discordApiRoot: nonEmpty(source.DISCORD_API_ROOT),
    discordGatewayUrl: nonEmpty(source.DISCORD_GATEWAY_URL),
    dockerHost: nonEmpty(source.DOCKER_HOST),
    mediagateHome: nonEmpty(source.MEDIAGATE_HOME),
    mediagateConfig: nonEmpty(source.MEDIAGATE_CONFIG),
    logLevel: nonEmpty(source.LOG_LEVEL),
    userHome: nonEmpty(source.HOME) ?? homedir(),
    variables: Object.freeze({ ...source }),
  };
}

/** An environment with nothing set, for tests and embedded use. */
export function emptyEnv(userHome: string = homedir()): GatewayEnv {
  return { userHome, variables: {} };
}
