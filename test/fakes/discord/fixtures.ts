/**
 * Object builders for the fake Discord server: the JSON shapes Discord sends (API v10),
 * filled with the fields discord.js reads, with snowflake string ids.
 */

const DiscordEpochMs = 1_420_070_400_000n;
let increment = 0n;

/** A snowflake id like Discord's: milliseconds since the Discord epoch, then a counter. */
export function snowflake(): string {
  increment = (increment + 1n) & 0xfffn;
  return (((BigInt(Date.now()) - DiscordEpochMs) << 22n) | increment).toString();
}

export const ChannelTypes = { GuildText: 0, DM: 1, PublicThread: 11, PrivateThread: 12 } as const;

export interface UserObject {
  readonly id: string;
  readonly username: string;
  readonly discriminator: string;
  readonly global_name: string | null;
  readonly avatar: null;
  readonly bot: boolean;
  readonly flags: number;
}

export function userObject(id: string, username: string, bot = false): UserObject {
  return { id, username, discriminator: "0", global_name: null, avatar: null, bot, flags: 0 };
}

/** A text channel of a guild. */
export interface ChannelFixture {
  readonly id: string;
  readonly name: string;
}

/** A public thread under one of the guild's text channels. */
export interface ThreadFixture {
  readonly id: string;
  readonly name: string;
  readonly parentId: string;
}

export interface GuildFixture {
  readonly id: string;
  readonly name: string;
  /** Boost level 0–3; decides the upload limit (10, 10, 50, 100 MiB). */
  readonly premiumTier: 0 | 1 | 2 | 3;
  readonly channels: readonly ChannelFixture[];
  readonly threads: readonly ThreadFixture[];
}

/** The upload limit Discord applies to a guild of this boost level (bots share it). */
export function uploadLimitForTier(tier: number): number {
  if (tier >= 3) return 100 * 1024 * 1024;
  if (tier === 2) return 50 * 1024 * 1024;
  return 10 * 1024 * 1024;
}

export function channelObject(guildId: string, channel: ChannelFixture, position: number) {
  return {
    id: channel.id,
    type: ChannelTypes.GuildText,
    guild_id: guildId,
    name: channel.name,
    position,
    permission_overwrites: [],
    parent_id: null,
    topic: null,
    nsfw: false,
    last_message_id: null,
    rate_limit_per_user: 0,
    flags: 0,
  };
}

/**
 * A thread as Discord sends it. `botJoinedAt`: the bot is a member of it since then; only
 * GUILD_CREATE (and THREAD_CREATE when the bot is added) carry that, as `member` without its
 * `id` and `user_id`: `GET /channels/:id` never does.
 */
export function threadObject(
  guildId: string,
  thread: ThreadFixture,
  ownerId: string,
  botJoinedAt?: string,
) {
  return {
    ...(botJoinedAt === undefined ? {} : { member: { join_timestamp: botJoinedAt, flags: 0 } }),
    id: thread.id,
    type: ChannelTypes.PublicThread,
    guild_id: guildId,
    parent_id: thread.parentId,
    owner_id: ownerId,
    name: thread.name,
    last_message_id: null,
    message_count: 0,
    member_count: 1,
    total_message_sent: 0,
    rate_limit_per_user: 0,
    flags: 0,
    thread_metadata: {
      archived: false,
      auto_archive_duration: 1440,
      archive_timestamp: new Date().toISOString(),
      locked: false,
    },
  };
}

export function dmChannelObject(channelId: string, recipient: UserObject) {
  return {
    id: channelId,
    type: ChannelTypes.DM,
    recipients: [recipient],
    last_message_id: null,
    flags: 0,
  };
}

export function memberObject(user?: UserObject) {
  return {
    ...(user ? { user } : {}),
    roles: [],
    nick: null,
    avatar: null,
    joined_at: new Date().toISOString(),
    premium_since: null,
    deaf: false,
    mute: false,
    pending: false,
    flags: 0,
  };
}

/**
 * The id of the bot's own role in a guild: the managed role Discord makes when a bot joins,
 * named after it and tagged with its id (`tags.bot_id`). Users can mention it (`<@&id>`), and
 * Discord clients offer it beside the bot's user when one types `@` and the bot's name.
 */
export function botRoleId(guild: Pick<GuildFixture, "id">): string {
  return (BigInt(guild.id) + 1n).toString();
}

/** The full GUILD_CREATE payload for a guild the bot is in. */
/**
 * GUILD_CREATE of `guild`; its active threads carry `member` where the bot joined them
 * (`botJoinedAt` answers when, or `undefined`).
 */
export function guildCreateObject(
  guild: GuildFixture,
  botUser: UserObject,
  botJoinedAt: (threadId: string) => string | undefined = () => undefined,
) {
  return {
    id: guild.id,
    name: guild.name,
    icon: null,
    splash: null,
    discovery_splash: null,
    owner_id: botUser.id,
    afk_channel_id: null,
    afk_timeout: 300,
    verification_level: 0,
    default_message_notifications: 0,
    explicit_content_filter: 0,
    roles: [
      {
        id: guild.id,
        name: "@everyone",
        color: 0,
        hoist: false,
        icon: null,
        unicode_emoji: null,
        position: 0,
        permissions: "1071698660929",
        managed: false,
        mentionable: false,
        flags: 0,
      },
      {
        id: botRoleId(guild),
        name: botUser.username,
        color: 0,
        hoist: false,
        icon: null,
        unicode_emoji: null,
        position: 1,
        permissions: "1071698660929",
        managed: true,
        mentionable: false,
        flags: 0,
        tags: { bot_id: botUser.id },
      },
    ],
    emojis: [],
    stickers: [],
    features: [],
    mfa_level: 0,
    application_id: null,
    system_channel_id: null,
    system_channel_flags: 0,
    rules_channel_id: null,
    vanity_url_code: null,
    description: null,
    banner: null,
    premium_tier: guild.premiumTier,
    premium_subscription_count: [0, 2, 7, 14][guild.premiumTier],
    preferred_locale: "en-US",
    public_updates_channel_id: null,
    nsfw_level: 0,
    premium_progress_bar_enabled: false,
    joined_at: new Date().toISOString(),
    large: false,
    unavailable: false,
    member_count: 2,
    voice_states: [],
    members: [{ ...memberObject(botUser), roles: [botRoleId(guild)] }],
    channels: guild.channels.map((channel, index) => channelObject(guild.id, channel, index)),
    threads: guild.threads.map((thread) =>
      threadObject(guild.id, thread, botUser.id, botJoinedAt(thread.id)),
    ),
    presences: [],
    stage_instances: [],
    guild_scheduled_events: [],
    soundboard_sounds: [],
  };
}

/** A world with one guild: channels `general` and `bot-room`, a thread under `general`. */
export function defaultGuild(premiumTier: GuildFixture["premiumTier"] = 0): GuildFixture {
  const general = snowflake();
  return {
    id: snowflake(),
    name: "Test Guild",
    premiumTier,
    channels: [
      { id: general, name: "general" },
      { id: snowflake(), name: "bot-room" },
    ],
    threads: [{ id: snowflake(), name: "help-thread", parentId: general }],
  };
}
