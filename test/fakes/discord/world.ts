import {
  ChannelTypes,
  channelObject,
  dmChannelObject,
  type GuildFixture,
  type ThreadFixture,
  threadObject,
  type UserObject,
  uploadLimitForTier,
  userObject,
} from "./fixtures.js";
import { mentionsOf } from "./mentions.js";
import type { RecordedFile } from "./requests.js";

/** A message the bot created through REST, with the bytes of every attachment. */
export interface StoredMessage {
  readonly id: string;
  readonly channelId: string;
  readonly guildId: string | undefined;
  readonly content: string;
  readonly nonce: string | number | undefined;
  readonly replyTo: string | undefined;
  readonly files: readonly RecordedFile[];
  /** The message object as REST answered it. */
  readonly json: Record<string, unknown>;
}

export type ChannelKind =
  | { readonly kind: "text"; readonly guild: GuildFixture; readonly index: number }
  | { readonly kind: "thread"; readonly guild: GuildFixture; readonly thread: ThreadFixture }
  | { readonly kind: "dm"; readonly recipient: UserObject };

/**
 * Guilds, channels, threads, DM channels, users, the messages the bot posted (`messages`) and
 * every message of each channel, users' included, as REST lists them (`history`).
 */
export class World {
  readonly guilds: GuildFixture[];
  readonly users = new Map<string, UserObject>();
  readonly messages: StoredMessage[] = [];
  readonly #history = new Map<string, Record<string, unknown>[]>();
  readonly #denied = new Set<string>();
  readonly #dmByUser = new Map<string, string>();
  readonly #dmChannels = new Map<string, UserObject>();
  /** The threads the bot is a member of, with when it joined. */
  readonly #botThreads = new Map<string, string>();

  constructor(
    readonly botUser: UserObject,
    guilds: readonly GuildFixture[],
  ) {
    this.guilds = guilds.map((guild) => ({ ...guild, threads: [...guild.threads] }));
    this.users.set(botUser.id, botUser);
  }

  user(id: string, username?: string): UserObject {
    const known = this.users.get(id);
    if (known && (username === undefined || known.username === username)) return known;
    const created = userObject(id, username ?? `user${id.slice(-4)}`);
    this.users.set(id, created);
    return created;
  }

  guild(id: string): GuildFixture {
    const guild = this.guilds.find((candidate) => candidate.id === id);
    if (!guild) throw new Error(`fake discord: no guild ${id}`);
    return guild;
  }

  /** The DM channel id between the bot and this user (created on first use). */
  dmChannel(userId: string): string {
    const existing = this.#dmByUser.get(userId);
    if (existing) return existing;
    const id = (BigInt(userId) + 7n).toString();
    this.#dmByUser.set(userId, id);
    this.#dmChannels.set(id, this.user(userId));
    return id;
  }

  /**
   * Adds the bot to a thread's members, as Discord does when it posts there; answers the join
   * time when it was not a member yet, `undefined` when it already was.
   */
  botJoinsThread(threadId: string): string | undefined {
    if (this.#botThreads.has(threadId)) return undefined;
    const at = new Date().toISOString();
    this.#botThreads.set(threadId, at);
    return at;
  }

  /** When the bot joined the thread, or `undefined` when it is not a member. */
  botJoinedAt(threadId: string): string | undefined {
    return this.#botThreads.get(threadId);
  }

  addThread(guildId: string, thread: ThreadFixture): void {
    const guild = this.guild(guildId);
    (guild.threads as ThreadFixture[]).push(thread);
  }

  channel(id: string): ChannelKind | undefined {
    for (const guild of this.guilds) {
      const index = guild.channels.findIndex((channel) => channel.id === id);
      if (index >= 0) return { kind: "text", guild, index };
      const thread = guild.threads.find((candidate) => candidate.id === id);
      if (thread) return { kind: "thread", guild, thread };
    }
    const recipient = this.#dmChannels.get(id);
    return recipient ? { kind: "dm", recipient } : undefined;
  }

  channelJson(id: string): Record<string, unknown> | undefined {
    const found = this.channel(id);
    if (!found) return undefined;
    switch (found.kind) {
      case "text":
        return channelObject(found.guild.id, found.guild.channels[found.index]!, found.index);
      case "thread":
        return threadObject(found.guild.id, found.thread, this.botUser.id);
      case "dm":
        return dmChannelObject(id, found.recipient);
    }
  }

  channelType(id: string): number | undefined {
    const found = this.channel(id);
    if (!found) return undefined;
    return found.kind === "text"
      ? ChannelTypes.GuildText
      : found.kind === "thread"
        ? ChannelTypes.PublicThread
        : ChannelTypes.DM;
  }

  /** Discord's per-request upload limit for this channel: the guild's boost level, else 10 MiB. */
  uploadLimit(channelId: string): number {
    const found = this.channel(channelId);
    return found && found.kind !== "dm" ? uploadLimitForTier(found.guild.premiumTier) : 10 << 20;
  }

  /** Adds a message (the bot's or a user's) to its channel's history, oldest first. */
  remember(channelId: string, json: Record<string, unknown>): void {
    const list = this.#history.get(channelId) ?? [];
    list.push(json);
    this.#history.set(channelId, list);
  }

  /** Every message of a channel, oldest first (ids grow with time). */
  history(channelId: string): readonly Record<string, unknown>[] {
    return this.#history.get(channelId) ?? [];
  }

  /** Makes a channel answer 403 Missing Access (the bot lost its permission). */
  denyAccess(channelId: string): void {
    this.#denied.add(channelId);
  }

  isDenied(channelId: string): boolean {
    return this.#denied.has(channelId);
  }

  /**
   * The mention fields of a bot's message with this content (`mention_everyone`, `mentions`,
   * `mention_roles`), parsed as the request's `allowed_mentions` lets Discord (see
   * {@link mentionsOf}).
   */
  mentionJson(content: string, allowedMentions: unknown): Record<string, unknown> {
    const parsed = mentionsOf(content, allowedMentions);
    return {
      mention_everyone: parsed.mention_everyone,
      mentions: parsed.mentionedUserIds.map((id) => this.user(id)),
      mention_roles: parsed.mention_roles,
    };
  }

  /**
   * The bot's message `messageId` of the channel with new content (`edited_timestamp` set),
   * in `messages` and the history alike; `undefined` when the bot has no such message. When the
   * edit sets the content (`mentions` given), its mentions are parsed anew, as the edit's
   * `allowed_mentions` lets them be (`mentions.allowed` undefined: every kind, as Discord does);
   * otherwise they stay as they were.
   */
  editMessage(
    channelId: string,
    messageId: string,
    content: string,
    components: readonly unknown[] | undefined,
    mentions: { readonly allowed: unknown } | undefined,
  ): StoredMessage | undefined {
    const index = this.messages.findIndex((m) => m.id === messageId && m.channelId === channelId);
    const found = this.messages[index];
    if (found === undefined) return undefined;
    const json = {
      ...found.json,
      content,
      ...(mentions === undefined ? {} : this.mentionJson(content, mentions.allowed)),
      ...(components === undefined ? {} : { components }),
      edited_timestamp: new Date().toISOString(),
    };
    const edited: StoredMessage = { ...found, content, json };
    this.messages[index] = edited;
    const history = this.#history.get(channelId) ?? [];
    const at = history.findIndex((m) => m.id === messageId);
    if (at >= 0) history[at] = json;
    return edited;
  }

  /** Removes the bot's message from `messages` and the history; false when there was none. */
  deleteMessage(channelId: string, messageId: string): boolean {
    const index = this.messages.findIndex((m) => m.id === messageId && m.channelId === channelId);
    if (index < 0) return false;
    this.messages.splice(index, 1);
    const history = this.#history.get(channelId) ?? [];
    const at = history.findIndex((m) => m.id === messageId);
    if (at >= 0) history.splice(at, 1);
    return true;
  }

  /** Whether a user's (not the bot's) message with this id is in the channel's history. */
  isUsersMessage(channelId: string, messageId: string): boolean {
    return (
      this.history(channelId).some((m) => m.id === messageId) &&
      !this.messages.some((m) => m.id === messageId)
    );
  }

  messagesIn(channelId: string): StoredMessage[] {
    return this.messages.filter((message) => message.channelId === channelId);
  }
}
