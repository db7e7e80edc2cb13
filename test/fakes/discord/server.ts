import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type AttachmentInput,
  type AttachmentObject,
  type DownloadFailure,
  FakeCdn,
  IsVoiceMessage,
  type RecordedDownload,
} from "./cdn.js";
import { type DiscordEditLimitOptions, DiscordEditLimits } from "./edit-limits.js";
import {
  botRoleId,
  defaultGuild,
  type GuildFixture,
  memberObject,
  snowflake,
  type ThreadFixture,
  threadObject,
  type UserObject,
  userObject,
} from "./fixtures.js";
import { FakeGateway, Intent } from "./gateway.js";
import { type FakeInteraction, FakeInteractions } from "./interactions.js";
import type { FakeReactions } from "./reactions.js";
import type { FailureInjection, RecordedCall } from "./requests.js";
import { FakeRest, type RequestGate } from "./rest.js";
import { type StoredMessage, World } from "./world.js";

export interface FakeDiscordOptions {
  /** The bot token REST and IDENTIFY accept (default `fake-discord-token`). */
  readonly token?: string;
  readonly botUser?: UserObject;
  /** Default: one `defaultGuild()`. */
  readonly guilds?: readonly GuildFixture[];
  /** HELLO's heartbeat interval (default 41250 ms, as Discord). */
  readonly heartbeatIntervalMs?: number;
  /**
   * Whether the privileged Message Content intent is enabled for the bot in the developer
   * portal (default true); when not, an IDENTIFY asking for it is closed with 4014 Disallowed
   * intent(s), as Discord does.
   */
  readonly messageContentEnabled?: boolean;
  /** How long a nonce with enforce_nonce returns the earlier message (default 5 minutes). */
  readonly nonceWindowMs?: number;
  /**
   * The clock of interactions' windows (3 s to answer, 15 minutes for the token), which hold
   * only when it is given (see `FakeInteractions`): a test moves it on instead of waiting.
   */
  readonly interactionClock?: () => number;
  /** What `GET /gateway/bot` advertises instead of the real socket URL (to test an override). */
  readonly advertisedGatewayUrl?: string;
}

export interface MessageInput {
  /** Default empty (a message with attachments only). */
  readonly content?: string;
  /** Default: a fixed human user. */
  readonly authorId?: string;
  readonly authorName?: string;
  readonly authorIsBot?: boolean;
  /** User ids mentioned; `mentionBot` adds `<@bot>` to the content and the mentions. */
  readonly mentions?: readonly string[];
  readonly mentionBot?: boolean;
  /**
   * Mentions the bot's managed role (`<@&role>`, see `botRoleId`) at the start of the content,
   * as a user who picked the role Discord offers beside the bot when typing `@` and its name.
   */
  readonly mentionBotRole?: boolean;
  /**
   * Files sent with the message: stored by the fake's CDN, listed in the message's
   * `attachments` (live and in `GET /channels/:id/messages`) with URLs on the fake itself.
   */
  readonly attachments?: readonly AttachmentInput[];
  /**
   * The id of a message of the same channel (the bot's or a user's) this one replies to: a
   * reply (type 19) with `message_reference` and the `referenced_message` object, as Discord
   * sends it. Its author is not mentioned (a reply with the ping turned off); add `mentions`
   * for one with the ping.
   */
  readonly replyTo?: string;
  /**
   * A forward (Discord's "Forward" of another message): the message's own content is empty and
   * it carries `message_reference` of type 1 (FORWARD) and `message_snapshots` with the
   * forwarded message's content and attachments, as Discord sends it (the snapshot's text and
   * files follow the Message Content intent as the message's own do).
   */
  readonly forwardOf?: {
    readonly content?: string;
    readonly attachments?: readonly AttachmentInput[];
  };
}

/** The message a helper dispatched as MESSAGE_CREATE. */
export interface DispatchedMessage {
  readonly id: string;
  readonly channelId: string;
  readonly guildId: string | undefined;
  readonly authorId: string;
  readonly content: string;
  /** The attachment objects of the message, in order (ids, URLs, sizes). */
  readonly attachments: readonly AttachmentObject[];
}

/**
 * One option of an interaction as Discord sends it: its name, its type as the command was
 * registered (3 string, 4 integer, 5 boolean, 10 number; 1 a subcommand and 2 a subcommand
 * group, which carry `options` instead of a `value`).
 */
export interface SlashCommandOption {
  readonly name: string;
  readonly type: number;
  readonly value?: unknown;
  readonly options?: readonly SlashCommandOption[];
}

/** A user runs one of the bot's slash commands ({@link FakeDiscord.sendSlashCommand}). */
export interface SlashCommandInput {
  readonly name: string;
  /**
   * Option values by name (booleans, strings, numbers), as the user filled them in; each is
   * sent with the type of its value. A list is sent as given: what a command registered
   * with other options (another program's, an older registration) makes Discord send.
   */
  readonly options?:
    | Readonly<Record<string, boolean | string | number>>
    | readonly SlashCommandOption[];
  /** Default: a fixed human user. */
  readonly authorId?: string;
  readonly authorName?: string;
  /** A guild text channel or thread; absent: the author's DM with the bot. */
  readonly channelId?: string;
  /**
   * Discord offers only registered commands; a test of a stale registration sets this to
   * run a name the bot never registered.
   */
  readonly unregistered?: boolean;
}

const DefaultAuthorId = "300000000000000001";
const OptionTypes = { boolean: 5, string: 3, number: 10 } as const;

function isOptionList(
  options: NonNullable<SlashCommandInput["options"]>,
): options is readonly SlashCommandOption[] {
  return Array.isArray(options);
}

/**
 * A local Discord (REST under `/api/v10`, gateway at `/gateway`) for the real discord.js client:
 * `new Client({ rest: { api: fake.apiRoot } })` and `client.login(fake.token)`.
 */
export class FakeDiscord {
  #token: string;
  readonly world: World;
  readonly rest: FakeRest;
  readonly gateway: FakeGateway;
  /** Attachment bytes and their downloads (the stand-in for Discord's CDN). */
  readonly cdn: FakeCdn;
  /** Application commands and the interactions users ran, with the bot's answers. */
  readonly interactions: FakeInteractions;
  readonly #server: Server;

  private constructor(server: Server, options: FakeDiscordOptions) {
    this.#server = server;
    this.#token = options.token ?? "fake-discord-token";
    const botUser = options.botUser ?? userObject(snowflake(), "mediagate", true);
    this.world = new World(botUser, options.guilds ?? [defaultGuild()]);
    this.cdn = new FakeCdn(() => `http://127.0.0.1:${this.port}`);
    this.interactions = new FakeInteractions(
      () => this.world.botUser.id,
      (interaction, data) => {
        const pressed = interaction.component;
        if (pressed === undefined) return false;
        const message = this.world.messages.find(
          (m) => m.id === pressed.messageId && m.channelId === interaction.channelId,
        );
        if (message === undefined) return false;
        const content = typeof data.content === "string" ? data.content : message.content;
        const components = Array.isArray(data.components) ? data.components : undefined;
        const edited = this.world.editMessage(
          message.channelId,
          message.id,
          content,
          components,
          typeof data.content === "string" ? { allowed: data.allowed_mentions } : undefined,
        );
        if (edited !== undefined) this.#echo(edited, "MESSAGE_UPDATE");
        return edited !== undefined;
      },
      options.interactionClock,
    );
    this.rest = new FakeRest({
      interactions: this.interactions,
      cdn: this.cdn,
      token: () => this.#token,
      world: this.world,
      gatewayUrl: () => options.advertisedGatewayUrl ?? this.gatewayUrl,
      nonceWindowMs: options.nonceWindowMs ?? 5 * 60_000,
      onCreated: (message) => {
        this.#joinThread(message);
        this.#echo(message);
      },
      onEdited: (message) => this.#echo(message, "MESSAGE_UPDATE"),
      onDeleted: (message) =>
        this.gateway.dispatch("MESSAGE_DELETE", (intents) =>
          messageView(
            {
              id: message.id,
              channel_id: message.channelId,
              ...(message.guildId === undefined ? {} : { guild_id: message.guildId }),
            },
            intents,
            true,
          ),
        ),
    });
    this.gateway = new FakeGateway({
      server,
      path: "/gateway",
      token: () => this.#token,
      world: this.world,
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 41_250,
      messageContentEnabled: options.messageContentEnabled ?? true,
      resumeUrl: () => this.gatewayUrl,
    });
    server.on("request", (req, res) => {
      const url = new URL(req.url ?? "/", "http://fake");
      if (this.cdn.handles(url.pathname)) {
        this.cdn.serve(req, res, url).catch(() => res.destroy());
        return;
      }
      const match = /^\/api(?:\/v\d+)?(\/.*)$/.exec(url.pathname);
      if (!match?.[1]) {
        res.writeHead(404);
        res.end();
        return;
      }
      this.rest.handle(req, res, match[1], url.searchParams).catch((error: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" });
        res.end(String(error));
      });
    });
  }

  static async start(options: FakeDiscordOptions = {}): Promise<FakeDiscord> {
    const server = createServer();
    const fake = new FakeDiscord(server, options);
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return fake;
  }

  /** The bot token REST and IDENTIFY accept. */
  get token(): string {
    return this.#token;
  }

  /**
   * The token was reset in the developer portal: the old one gets 401 on REST, and every open
   * gateway socket is closed with 4004 (Authentication failed), as Discord does.
   */
  revokeToken(): void {
    this.#token = `revoked-${snowflake()}`;
    this.gateway.closeAll(4004, "Authentication failed.");
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** Pass as discord.js `rest.api`. */
  get apiRoot(): string {
    return `http://127.0.0.1:${this.port}/api`;
  }

  get gatewayUrl(): string {
    return `ws://127.0.0.1:${this.port}/gateway`;
  }

  get botUser(): UserObject {
    return this.world.botUser;
  }

  get guild(): GuildFixture {
    return this.world.guilds[0]!;
  }

  get calls(): readonly RecordedCall[] {
    return this.rest.calls;
  }

  /** The bot's own reactions on messages, and each accepted change in order. */
  get reactions(): FakeReactions {
    return this.rest.reactions;
  }

  /** Message creates answered, including failed and deduplicated ones. */
  messageCreates(channelId?: string): RecordedCall[] {
    return this.rest.calls.filter(
      (call) =>
        call.method === "POST" &&
        /^\/channels\/\d+\/messages$/.test(call.path) &&
        (channelId === undefined || call.path === `/channels/${channelId}/messages`),
    );
  }

  /** Messages that exist (each posted once), with their attachment bytes. */
  messagesIn(channelId: string): StoredMessage[] {
    return this.world.messagesIn(channelId);
  }

  /** Every request for attachment bytes the fake's CDN answered, in arrival order. */
  get downloads(): readonly RecordedDownload[] {
    return this.cdn.downloads;
  }

  /**
   * The next download(s) answer `status`, are cut off after `cutAfterBytes`, or are
   * redirected to `redirectTo`.
   */
  failNextDownload(failure: DownloadFailure): void {
    this.cdn.failNext(failure);
  }

  /** Holds REST requests matching `method` and `path` until the gate is opened. */
  gateRequests(method: string, path: RegExp): RequestGate {
    return this.rest.gate(method, path);
  }

  /** The bot lost access to a channel: REST answers 403 Missing Access for it. */
  denyAccess(channelId: string): void {
    this.world.denyAccess(channelId);
  }

  /**
   * From now on, message edits (`PATCH /channels/:id/messages/:id`) keep Discord's pace per
   * channel (five per five seconds) or get a 429 with `retry_after`; the answer counts them.
   */
  limitEdits(options: DiscordEditLimitOptions = {}): DiscordEditLimits {
    this.rest.editLimits = new DiscordEditLimits(options);
    return this.rest.editLimits;
  }

  injectFailure(failure: FailureInjection): void {
    this.rest.injectFailure(failure);
  }

  /** The failures injected and not used up yet are dropped (an outage ends). */
  clearFailures(): void {
    this.rest.clearFailures();
  }

  /**
   * Drop the websocket abnormally (1006); discord.js should RESUME the session. With
   * `holdReconnect`, new sockets get no HELLO until {@link releaseGateway} (an outage).
   */
  dropSocket(options: { readonly holdReconnect?: boolean } = {}): void {
    if (options.holdReconnect) this.gateway.hold();
    this.gateway.dropSocket();
  }

  /**
   * Drop the websocket (1006) and forget the session, as Discord does once a session expired:
   * discord.js's RESUME gets op 9 Invalid Session (`d: false`) and it IDENTIFYs anew. Messages
   * sent until then are not replayed; they exist only in the channels' history (`GET
   * /channels/:id/messages`). With `holdReconnect`, new sockets get no HELLO until
   * {@link releaseGateway}.
   */
  invalidateSession(options: { readonly holdReconnect?: boolean } = {}): void {
    if (options.holdReconnect) this.gateway.hold();
    this.gateway.invalidateSessions();
  }

  /**
   * Ends an outage begun with `dropSocket` or `invalidateSession` and `holdReconnect: true`:
   * waiting sockets get HELLO.
   */
  releaseGateway(): void {
    this.gateway.release();
  }

  /** Resolves on the next REST call matching the predicate (already recorded ones count). */
  async waitForCall(predicate: (call: RecordedCall) => boolean): Promise<RecordedCall> {
    const found = this.rest.calls.find(predicate);
    if (found) return found;
    return new Promise((resolve) => {
      const listener = (call: RecordedCall) => {
        if (!predicate(call)) return;
        this.rest.off("call", listener);
        resolve(call);
      };
      this.rest.on("call", listener);
    });
  }

  /** MESSAGE_CREATE in a guild text channel, with `member` and resolved `mentions`. */
  sendGuildMessage(channelId: string, input: MessageInput): DispatchedMessage {
    const found = this.world.channel(channelId);
    if (found?.kind !== "text") throw new Error(`fake discord: ${channelId} is no text channel`);
    return this.#dispatchMessage(channelId, found.guild.id, 0, input);
  }

  /** MESSAGE_CREATE in a thread (channel type 11 with a parent). */
  sendThreadMessage(threadId: string, input: MessageInput): DispatchedMessage {
    const found = this.world.channel(threadId);
    if (found?.kind !== "thread") throw new Error(`fake discord: ${threadId} is no thread`);
    return this.#dispatchMessage(threadId, found.guild.id, 11, input);
  }

  /** MESSAGE_CREATE in the DM channel between the author and the bot (no guild_id). */
  sendDirectMessage(input: MessageInput): DispatchedMessage {
    const channelId = this.world.dmChannel(input.authorId ?? DefaultAuthorId);
    return this.#dispatchMessage(channelId, undefined, 1, input);
  }

  /**
   * A user runs a slash command: INTERACTION_CREATE (type 2, APPLICATION_COMMAND, chat input)
   * with the command's registered id, its options, the channel, and `member` in a guild or
   * `user` in a DM, as Discord sends it (whatever the intents). The returned interaction
   * records the bot's callback, original reply and follow-ups.
   */
  sendSlashCommand(input: SlashCommandInput): FakeInteraction {
    const registered = this.interactions.commands().find((c) => c.name === input.name);
    if (registered === undefined && input.unregistered !== true) {
      throw new Error(`fake discord: /${input.name} is not a registered command`);
    }
    const authorId = input.authorId ?? DefaultAuthorId;
    const user = this.world.user(authorId, input.authorName);
    const channelId = input.channelId ?? this.world.dmChannel(authorId);
    const found = this.world.channel(channelId);
    if (found === undefined) throw new Error(`fake discord: no channel ${channelId}`);
    const guildId = found.kind === "dm" ? undefined : found.guild.id;
    const interaction = this.interactions.create({
      commandName: input.name,
      userId: authorId,
      channelId,
    });
    const given = input.options ?? {};
    const options = isOptionList(given)
      ? given
      : Object.entries(given).map(([name, value]) => ({
          name,
          type: OptionTypes[typeof value as keyof typeof OptionTypes],
          value,
        }));
    const payload = {
      id: interaction.id,
      application_id: this.botUser.id,
      type: 2,
      token: interaction.token,
      version: 1,
      data: { id: registered?.id ?? snowflake(), name: input.name, type: 1, options },
      ...this.#interactionContext(channelId, guildId, user),
    };
    this.gateway.dispatch("INTERACTION_CREATE", () => payload);
    return interaction;
  }

  /**
   * A user presses the button labelled `button` (or whose `custom_id` it is) of a message the
   * bot posted: INTERACTION_CREATE type 3 (MESSAGE_COMPONENT) with the button's `custom_id`,
   * the message as it is now, and `member` in a guild or `user` in a DM. Throws when the
   * message has no such button (a real client cannot press it); {@link sendComponentPress}
   * sends any `custom_id`, as a modified client can.
   */
  pressButton(input: {
    channelId: string;
    messageId: string;
    button: string;
    authorId?: string;
    authorName?: string;
  }): FakeInteraction {
    const message = this.world.messages.find(
      (m) => m.id === input.messageId && m.channelId === input.channelId,
    );
    const rows = (message?.json.components ?? []) as {
      components: { label: string; custom_id: string }[];
    }[];
    const button = rows
      .flatMap((row) => row.components)
      .find((b) => b.label === input.button || b.custom_id === input.button);
    if (button === undefined) {
      throw new Error(`fake discord: message ${input.messageId} has no button ${input.button}`);
    }
    return this.sendComponentPress({ ...input, customId: button.custom_id });
  }

  /** A button press with any `custom_id` on a message of the bot (a forged press). */
  sendComponentPress(input: {
    channelId: string;
    messageId: string;
    customId: string;
    authorId?: string;
    authorName?: string;
  }): FakeInteraction {
    const message = this.world.messages.find(
      (m) => m.id === input.messageId && m.channelId === input.channelId,
    );
    if (message === undefined) throw new Error(`fake discord: no message ${input.messageId}`);
    const authorId = input.authorId ?? DefaultAuthorId;
    const user = this.world.user(authorId, input.authorName);
    const found = this.world.channel(input.channelId);
    const guildId = found === undefined || found.kind === "dm" ? undefined : found.guild.id;
    const interaction = this.interactions.create({
      commandName: "",
      userId: authorId,
      channelId: input.channelId,
      component: { customId: input.customId, messageId: input.messageId },
    });
    const payload = {
      id: interaction.id,
      application_id: this.botUser.id,
      type: 3,
      token: interaction.token,
      version: 1,
      data: { custom_id: input.customId, component_type: 2 },
      message: message.json,
      ...this.#interactionContext(input.channelId, guildId, user),
    };
    this.gateway.dispatch("INTERACTION_CREATE", () => payload);
    return interaction;
  }

  /**
   * The fields every INTERACTION_CREATE carries about where and by whom: the channel, and
   * `member` in a guild or `user` in a DM, as Discord sends them.
   */
  #interactionContext(
    channelId: string,
    guildId: string | undefined,
    user: ReturnType<FakeDiscord["world"]["user"]>,
  ) {
    return {
      channel: this.world.channelJson(channelId),
      channel_id: channelId,
      ...(guildId === undefined
        ? { user, context: 1 }
        : {
            guild_id: guildId,
            guild_locale: "en-US",
            member: { ...memberObject(user), permissions: "2248473465835073" },
            context: 0,
          }),
      locale: "en-US",
      app_permissions: "2248473465835073",
      entitlements: [],
      authorizing_integration_owners: { "0": guildId ?? "0" },
      attachment_size_limit: 10 * 1024 * 1024,
    };
  }

  /**
   * Discord makes a user who posts in a thread a member of it: for the bot, THREAD_MEMBERS_UPDATE
   * tells it (sent without the GUILD_MEMBERS intent too, since the member added is itself), and
   * later GUILD_CREATEs carry the thread's `member`.
   */
  #joinThread(message: StoredMessage): void {
    const found = this.world.channel(message.channelId);
    if (found?.kind !== "thread") return;
    const joinedAt = this.world.botJoinsThread(found.thread.id);
    if (joinedAt === undefined) return;
    this.gateway.dispatch("THREAD_MEMBERS_UPDATE", () => ({
      id: found.thread.id,
      guild_id: found.guild.id,
      member_count: 2,
      added_members: [
        { id: found.thread.id, user_id: this.botUser.id, join_timestamp: joinedAt, flags: 0 },
      ],
    }));
  }

  /**
   * GUILD_CREATEs of the next gateway sessions wait until {@link releaseGuilds}, as for a bot
   * whose servers load slowly: READY comes first, with every guild unavailable.
   */
  holdGuilds(): void {
    this.gateway.holdGuilds();
  }

  /** Sends the GUILD_CREATEs held back by {@link holdGuilds}. */
  releaseGuilds(): void {
    this.gateway.releaseGuilds();
  }

  /** Create a thread under a text channel and dispatch THREAD_CREATE. */
  createThread(parentId: string, name = "new-thread"): ThreadFixture {
    const found = this.world.channel(parentId);
    if (found?.kind !== "text") throw new Error(`fake discord: ${parentId} is no text channel`);
    const thread = { id: snowflake(), name, parentId };
    this.world.addThread(found.guild.id, thread);
    this.gateway.dispatch("THREAD_CREATE", () => ({
      ...threadObject(found.guild.id, thread, this.botUser.id),
      newly_created: true,
    }));
    return thread;
  }

  async close(): Promise<void> {
    await this.gateway.close();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #dispatchMessage(
    channelId: string,
    guildId: string | undefined,
    channelType: number,
    input: MessageInput,
  ): DispatchedMessage {
    const author = this.world.user(input.authorId ?? DefaultAuthorId, input.authorName);
    const authorObject = input.authorIsBot ? { ...author, bot: true } : author;
    const mentionIds = [...(input.mentions ?? []), ...(input.mentionBot ? [this.botUser.id] : [])];
    const text = input.content ?? "";
    const roleId =
      input.mentionBotRole === true && guildId !== undefined
        ? botRoleId(this.world.guild(guildId))
        : undefined;
    const withRole = roleId === undefined ? text : `<@&${roleId}> ${text}`;
    const content = input.mentionBot ? `<@${this.botUser.id}> ${withRole}` : withRole;
    const id = snowflake();
    const inputs = input.attachments ?? [];
    const attachments = inputs.map((file) => this.cdn.add(channelId, file));
    const voice = inputs.some((file) => file.voice === true);
    const base = {
      id,
      channel_id: channelId,
      channel_type: channelType,
      ...(guildId === undefined ? {} : { guild_id: guildId, member: memberObject() }),
      author: authorObject,
      content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: mentionIds.map((userId) => ({
        ...this.world.user(userId),
        ...(guildId === undefined ? {} : { member: memberObject() }),
      })),
      mention_roles: roleId === undefined ? [] : [roleId],
      attachments,
      embeds: [],
      pinned: false,
      type: 0,
      flags: voice ? IsVoiceMessage : 0,
      ...this.#replyFields(channelId, guildId, input.replyTo),
      ...this.#forwardFields(channelId, input.forwardOf),
    };
    const mentionsBot = mentionIds.includes(this.botUser.id);
    this.world.remember(channelId, base);
    this.gateway.dispatch("MESSAGE_CREATE", (intents) => messageView(base, intents, mentionsBot));
    return {
      id,
      channelId,
      guildId,
      authorId: author.id,
      content,
      attachments,
    };
  }

  /** The fields that make a message a forward of `forwardOf` (nothing without one). */
  #forwardFields(channelId: string, forwardOf: MessageInput["forwardOf"]): Record<string, unknown> {
    if (forwardOf === undefined) return {};
    const files = (forwardOf.attachments ?? []).map((file) => this.cdn.add(channelId, file));
    return {
      message_reference: { type: 1, message_id: snowflake(), channel_id: snowflake() },
      message_snapshots: [
        {
          message: {
            type: 0,
            content: forwardOf.content ?? "",
            embeds: [],
            attachments: files,
            timestamp: new Date().toISOString(),
            edited_timestamp: null,
            flags: 0,
            mentions: [],
            mention_roles: [],
          },
        },
      ],
    };
  }

  /** The fields that make a message a reply to `replyTo` (nothing without one). */
  #replyFields(
    channelId: string,
    guildId: string | undefined,
    replyTo: string | undefined,
  ): Record<string, unknown> {
    if (replyTo === undefined) return {};
    const referenced = this.world.history(channelId).find((json) => json.id === replyTo);
    if (referenced === undefined) {
      throw new Error(`fake discord: no message ${replyTo} in ${channelId} to reply to`);
    }
    return {
      type: 19,
      message_reference: {
        type: 0,
        message_id: replyTo,
        channel_id: channelId,
        ...(guildId === undefined ? {} : { guild_id: guildId }),
      },
      referenced_message: referenced,
    };
  }

  /** Discord echoes the bot's own messages (and their edits) to it over the gateway. */
  #echo(message: StoredMessage, event = "MESSAGE_CREATE"): void {
    const channelType = this.world.channelType(message.channelId) ?? 0;
    const base = {
      ...message.json,
      channel_type: channelType,
      ...(message.guildId === undefined ? {} : { member: memberObject() }),
    };
    this.gateway.dispatch(event, (intents) => messageView(base, intents, true));
  }
}

/** Discord's intent rules: DMs need DIRECT_MESSAGES, guild messages GUILD_MESSAGES, and
 * content needs MESSAGE_CONTENT unless the bot is mentioned (or wrote it). */
function messageView(
  message: Record<string, unknown>,
  intents: number,
  contentAlwaysVisible: boolean,
): unknown {
  if (message.guild_id === undefined) {
    return intents & Intent.DirectMessages ? message : undefined;
  }
  if (!(intents & Intent.GuildMessages)) return undefined;
  if (contentAlwaysVisible || intents & Intent.MessageContent) return message;
  const snapshots = message.message_snapshots as { message: object }[] | undefined;
  return {
    ...message,
    content: "",
    attachments: [],
    embeds: [],
    ...(snapshots === undefined
      ? {}
      : {
          message_snapshots: snapshots.map((snapshot) => ({
            message: { ...snapshot.message, content: "", attachments: [], embeds: [] },
          })),
        }),
  };
}
