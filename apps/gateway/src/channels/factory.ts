import type { Sleep } from "@mediagate/io";
import type { BotLeadership } from "../cluster/leader-lease.js";
import { menuOfferOf } from "../commands/menu.js";
import type { GatewayConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import { ConsoleChannel } from "./console.js";
import type { SharedTerminal } from "./console-terminal.js";
import { TelegramChannel } from "./telegram/telegram-channel.js";
import type { ChannelAdapter } from "./types.js";

/** Options of {@link createChannels}. */
export interface ChannelFactoryOptions {
  readonly logger: Logger;
  /** Called when the console's input ends. */
  readonly onConsoleClose?: (() => void) | undefined;
  /** The wait between send attempts of every bot channel; default a real timer. */
  readonly retrySleep?: Sleep | undefined;
  /** The terminal the console shares with the logs, when it does. */
  readonly consoleTerminal?: SharedTerminal | undefined;
  /**
   * In a cluster (docs/cluster.md): the lease by which one replica polls a Telegram bot or
   * holds a Discord bot's gateway connection. Absent: this process is the only one.
   */
  readonly leaderFor?:
    | ((platform: "telegram" | "discord", token: string) => BotLeadership)
    | undefined;
}

/**
 * The channels a config asks for: Telegram and Discord for each profile whose token is set;
 * when no profile has any token, the local console serves the first (only) profile.
 *
 * discord.js is loaded only when a profile has a Discord bot: importing it costs about 0.5 s
 * of CPU (measured with `node --cpu-prof` on the CLI's start), which every gateway without one,
 * and every test that starts such a gateway, would pay for nothing.
 */
export async function createChannels(
  config: GatewayConfig,
  options: ChannelFactoryOptions,
): Promise<ChannelAdapter[]> {
  const { DiscordChannel } = config.profiles.some((profile) => profile.discord !== undefined)
    ? await import("./discord/discord-channel.js")
    : { DiscordChannel: undefined };
  const channels: ChannelAdapter[] = [];
  for (const profile of config.profiles) {
    const logger = options.logger.child({ profile: profile.name });
    if (profile.telegram !== undefined) {
      channels.push(
        new TelegramChannel({
          token: profile.telegram.token,
          apiRoot: profile.telegram.apiRoot,
          profile: profile.name,
          logger: logger.child({ platform: "telegram" }),
          limits: {
            photoBytes: profile.telegram.photoMaxBytes,
            otherBytes: profile.telegram.uploadMaxBytes,
          },
          ambiguousSends: config.delivery.ambiguousSends,
          pollTimeoutSeconds: profile.telegram.pollTimeoutSeconds,
          downloadMaxBytes: profile.telegram.downloadMaxBytes,
          localFiles: profile.telegram.localFiles,
          groups: profile.telegram.groups,
          commands: {
            register: profile.telegram.commands.register,
            adminChatIds: adminIds(profile.admins, "telegram"),
            offer: menuOfferOf(profile),
          },
          maxTextChunks: config.delivery.maxTextChunks,
          retry: { sleep: options.retrySleep },
          webhook: profile.telegram.webhook,
          // A webhook needs no leader: every replica may take the updates sent to it.
          leader:
            profile.telegram.webhook === undefined
              ? options.leaderFor?.("telegram", profile.telegram.token)
              : undefined,
        }),
      );
    }
    if (profile.discord !== undefined && DiscordChannel !== undefined) {
      channels.push(
        new DiscordChannel({
          token: profile.discord.token,
          apiRoot: profile.discord.apiRoot,
          gatewayUrl: profile.discord.gatewayUrl,
          profile: profile.name,
          logger: logger.child({ platform: "discord" }),
          respondIn: {
            channelIds: profile.discord.channels,
            allowedChannelIds: profile.discord.allowedChannels,
          },
          limits: { maxBytes: profile.discord.uploadMaxBytes },
          catchUpMaxMessages: profile.discord.catchUpMaxMessages,
          commands: { register: profile.discord.commands.register, offer: menuOfferOf(profile) },
          downloadMaxBytes: profile.discord.downloadMaxBytes,
          maxTextChunks: config.delivery.maxTextChunks,
          retry: { sleep: options.retrySleep },
          leader: options.leaderFor?.("discord", profile.discord.token),
        }),
      );
    }
  }
  if (channels.length === 0) {
    const profile = config.profiles[0]!;
    channels.push(
      new ConsoleChannel({
        profile: profile.name,
        home: profile.home,
        onClose: options.onConsoleClose,
        logger: options.logger.child({ profile: profile.name, platform: "console" }),
        terminal: options.consoleTerminal,
      }),
    );
  }
  return channels;
}

/** The bare ids of a profile's admins on one platform (`telegram:123` → `123`). */
function adminIds(admins: readonly string[], platform: "telegram" | "discord"): string[] {
  const prefix = `${platform}:`;
  return admins.filter((id) => id.startsWith(prefix)).map((id) => id.slice(prefix.length));
}
