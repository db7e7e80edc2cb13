import { snowflake } from "./fixtures.js";
import { discordError, isRecord } from "./requests.js";

/** What a route answers (status, JSON body); `undefined` body with 204. */
export interface InteractionAnswer {
  readonly status: number;
  readonly body?: unknown;
}

/** An application command as `PUT /applications/:id/commands` stored it. */
export interface ApplicationCommand {
  readonly id: string;
  readonly application_id: string;
  readonly version: string;
  readonly type: number;
  readonly name: string;
  readonly description: string;
  readonly options: readonly Record<string, unknown>[];
  readonly default_member_permissions: string | null;
  readonly dm_permission: boolean;
  readonly nsfw: boolean;
}

/** One message of an interaction's answer: the original (deferred or sent) reply or a follow-up. */
export interface InteractionMessage {
  readonly id: string;
  content: string;
  /** `64` (EPHEMERAL) when only the user who ran the command sees it. */
  readonly flags: number;
}

/** A slash command a user ran, with everything the bot answered to it. */
export interface FakeInteraction {
  readonly id: string;
  readonly token: string;
  /** When the user ran it, on the fake's interaction clock (see `FakeInteractions`). */
  readonly createdAtMs: number;
  /** The slash command's name; `""` for a button press. */
  readonly commandName: string;
  /** A button press (type 3, MESSAGE_COMPONENT): the button's `custom_id` and its message. */
  readonly component?: { readonly customId: string; readonly messageId: string } | undefined;
  readonly userId: string;
  readonly channelId: string;
  /**
   * The callback: `type` 4 (a reply) or 5 (deferred, "thinking…"), and its `flags`;
   * undefined until the bot acknowledged it.
   */
  callback: { readonly type: number; readonly flags: number } | undefined;
  /** The reply the user sees in place of the command (set by a type 4 callback or `@original` edits). */
  original: InteractionMessage | undefined;
  readonly followUps: InteractionMessage[];
}

const Ephemeral = 1 << 6;
/** Discord's window for an interaction's first answer (its callback). */
export const InteractionCallbackWindowMs = 3_000;
/** How long an interaction's token answers its webhook routes (edits, follow-ups). */
export const InteractionTokenLifetimeMs = 15 * 60_000;
const CommandName = /^[-_\p{Ll}\p{Lo}\p{N}]{1,32}$/u;

/**
 * Application commands and interactions, as Discord's REST answers them:
 *
 * - `PUT /applications/:app/commands` overwrites the global commands (names 1–32 lowercase
 *   characters, descriptions 1–100, at most 100 commands; 400 50035 otherwise; a command that
 *   keeps its name keeps its id), `GET` lists them. The same under
 *   `/applications/:app/guilds/:guild/commands` for one guild's commands.
 * - `POST /interactions/:id/:token/callback` acknowledges an interaction once (type 4 reply or
 *   5 deferred; for a button press also 6, deferred update, or 7, UPDATE_MESSAGE: the pressed
 *   message takes the callback's `content` and `components`; 400 40060 "Interaction has already been acknowledged." the second time, 404
 *   10062 "Unknown interaction" for a wrong id or token); 204, or the callback response with
 *   `with_response=true`.
 * - `PATCH` / `GET /webhooks/:app/:token/messages/@original` edit or read the original reply
 *   (404 10008 before an acknowledgement), `POST /webhooks/:app/:token` sends a follow-up
 *   (with `flags` 64 it is ephemeral too).
 *
 * These routes take no bot token (discord.js sends none): the interaction token is the key.
 *
 * With a `clock`, Discord's windows hold on it: a callback more than 3 s after the interaction
 * is 404 10062 "Unknown interaction", a webhook call more than 15 minutes after it is 401 50027
 * "Invalid Webhook Token". Without one (the default) there are none: a wall-clock window would
 * make tests on a busy machine fail by their speed.
 */
export class FakeInteractions {
  readonly #commands = new Map<string, ApplicationCommand[]>();
  readonly interactions: FakeInteraction[] = [];

  /**
   * @param updateMessage applies a component interaction's type 7 (UPDATE_MESSAGE) callback to
   *   the pressed message (`content`, `components`); false when the message is gone.
   */
  constructor(
    private readonly applicationId: () => string,
    private readonly updateMessage: (
      interaction: FakeInteraction,
      data: Record<string, unknown>,
    ) => boolean = () => false,
    private readonly clock?: () => number,
  ) {}

  /** The registered commands: global, or one guild's. */
  commands(guildId?: string): readonly ApplicationCommand[] {
    return this.#commands.get(guildId ?? "global") ?? [];
  }

  /** A user runs a command: recorded, waiting for the bot's callback. */
  create(
    input: Pick<FakeInteraction, "commandName" | "userId" | "channelId" | "component">,
  ): FakeInteraction {
    const interaction: FakeInteraction = {
      ...input,
      createdAtMs: this.clock?.() ?? Date.now(),
      id: snowflake(),
      token: `interaction-token-${snowflake()}`,
      callback: undefined,
      original: undefined,
      followUps: [],
    };
    this.interactions.push(interaction);
    return interaction;
  }

  /** Whether the path is one of these routes (those that need no bot token). */
  static tokenless(path: string): boolean {
    return /^\/(interactions|webhooks)\//.test(path);
  }

  /** Answers a request of one of these routes, or `undefined` for another path. */
  route(
    method: string,
    path: string,
    payload: unknown,
    query: URLSearchParams,
  ): InteractionAnswer | undefined {
    const commands = /^\/applications\/(\d+)(?:\/guilds\/(\d+))?\/commands$/.exec(path);
    if (commands !== null) return this.#commandsRoute(method, commands[1]!, commands[2], payload);
    const callback = /^\/interactions\/(\d+)\/([^/]+)\/callback$/.exec(path);
    if (callback !== null) {
      return method === "POST"
        ? this.#callback(callback[1]!, callback[2]!, payload, query)
        : notAllowed();
    }
    const webhook = /^\/webhooks\/(\d+)\/([^/]+)(\/messages\/(?:@|%40)original)?$/.exec(path);
    if (webhook !== null)
      return this.#webhook(method, webhook[1]!, webhook[2]!, !!webhook[3], payload);
    return undefined;
  }

  #commandsRoute(
    method: string,
    applicationId: string,
    guildId: string | undefined,
    payload: unknown,
  ): InteractionAnswer {
    if (applicationId !== this.applicationId()) {
      return { status: 403, body: discordError(50001, "Missing Access") };
    }
    const key = guildId ?? "global";
    if (method === "GET") return { status: 200, body: this.#commands.get(key) ?? [] };
    if (method !== "PUT") return notAllowed();
    if (!Array.isArray(payload) || payload.length > 100) {
      return { status: 400, body: invalid("_errors", "BASE_TYPE_BAD_LENGTH") };
    }
    const before = this.#commands.get(key) ?? [];
    const stored: ApplicationCommand[] = [];
    for (const [index, raw] of payload.entries()) {
      if (!isRecord(raw)) return { status: 400, body: invalid(`${index}`, "MODEL_TYPE_CONVERT") };
      const name = raw.name;
      const description = raw.description;
      if (typeof name !== "string" || !CommandName.test(name)) {
        return { status: 400, body: invalid(`${index}.name`, "APPLICATION_COMMAND_INVALID_NAME") };
      }
      if (typeof description !== "string" || description.length < 1 || description.length > 100) {
        return { status: 400, body: invalid(`${index}.description`, "BASE_TYPE_BAD_LENGTH") };
      }
      stored.push({
        id: before.find((command) => command.name === name)?.id ?? snowflake(),
        application_id: applicationId,
        version: snowflake(),
        type: typeof raw.type === "number" ? raw.type : 1,
        name,
        description,
        options: Array.isArray(raw.options) ? raw.options.filter(isRecord) : [],
        default_member_permissions:
          typeof raw.default_member_permissions === "string"
            ? raw.default_member_permissions
            : null,
        dm_permission: raw.dm_permission !== false,
        nsfw: raw.nsfw === true,
      });
    }
    this.#commands.set(key, stored);
    return { status: 200, body: stored };
  }

  #callback(
    id: string,
    token: string,
    payload: unknown,
    query: URLSearchParams,
  ): InteractionAnswer {
    const interaction = this.interactions.find((i) => i.id === id && i.token === token);
    if (interaction === undefined || this.#olderThan(interaction, InteractionCallbackWindowMs)) {
      return { status: 404, body: discordError(10062, "Unknown interaction") };
    }
    if (interaction.callback !== undefined) {
      return {
        status: 400,
        body: discordError(40060, "Interaction has already been acknowledged."),
      };
    }
    const body = isRecord(payload) ? payload : {};
    const data = isRecord(body.data) ? body.data : {};
    const type = body.type;
    // A button press may also be answered by editing its message: 6 deferred, 7 at once.
    const allowed = interaction.component === undefined ? [4, 5] : [4, 5, 6, 7];
    if (typeof type !== "number" || !allowed.includes(type))
      return { status: 400, body: invalid("type", "BASE_TYPE_CHOICES") };
    const flags = typeof data.flags === "number" ? data.flags : 0;
    if (type === 7 && !this.updateMessage(interaction, data)) {
      return { status: 404, body: discordError(10008, "Unknown Message") };
    }
    interaction.callback = { type, flags };
    if (type === 4) {
      interaction.original = {
        id: snowflake(),
        content: typeof data.content === "string" ? data.content : "",
        flags: flags & Ephemeral,
      };
    }
    if (query.get("with_response") !== "true") return { status: 204 };
    return {
      status: 200,
      body: {
        interaction: { id, type: 2, response_message_ephemeral: (flags & Ephemeral) !== 0 },
        ...(interaction.original === undefined
          ? {}
          : { resource: { type: 4, message: this.#message(interaction, interaction.original) } }),
      },
    };
  }

  #webhook(
    method: string,
    applicationId: string,
    token: string,
    original: boolean,
    payload: unknown,
  ): InteractionAnswer {
    const interaction = this.interactions.find((i) => i.token === token);
    if (interaction === undefined || applicationId !== this.applicationId()) {
      return { status: 404, body: discordError(10015, "Unknown Webhook") };
    }
    if (this.#olderThan(interaction, InteractionTokenLifetimeMs)) {
      return { status: 401, body: discordError(50027, "Invalid Webhook Token") };
    }
    const body = isRecord(payload) ? payload : {};
    const content = typeof body.content === "string" ? body.content : undefined;
    if (content !== undefined && content.length > 2000) {
      return { status: 400, body: invalid("content", "BASE_TYPE_MAX_LENGTH") };
    }
    if (original) {
      if (interaction.callback === undefined) {
        return { status: 404, body: discordError(10008, "Unknown Message") };
      }
      if (method === "GET") {
        const message = interaction.original ?? this.#deferred(interaction);
        return { status: 200, body: this.#message(interaction, message) };
      }
      if (method !== "PATCH") return notAllowed();
      const message = interaction.original ?? this.#deferred(interaction);
      interaction.original = message;
      if (content !== undefined) message.content = content;
      return { status: 200, body: this.#message(interaction, message) };
    }
    if (method !== "POST") return notAllowed();
    if (interaction.callback === undefined) {
      return { status: 400, body: discordError(10062, "Unknown interaction") };
    }
    if (content === undefined || content === "") {
      return { status: 400, body: discordError(50006, "Cannot send an empty message") };
    }
    const flags = typeof body.flags === "number" ? body.flags & Ephemeral : 0;
    const message: InteractionMessage = { id: snowflake(), content, flags };
    interaction.followUps.push(message);
    return { status: 200, body: this.#message(interaction, message) };
  }

  /** Whether the interaction is more than `windowMs` old on the clock (never without one). */
  #olderThan(interaction: FakeInteraction, windowMs: number): boolean {
    return this.clock !== undefined && this.clock() - interaction.createdAtMs > windowMs;
  }

  /** The original reply a deferred callback stands for: empty, with the callback's flags. */
  #deferred(interaction: FakeInteraction): InteractionMessage {
    return { id: snowflake(), content: "", flags: (interaction.callback?.flags ?? 0) & Ephemeral };
  }

  #message(interaction: FakeInteraction, message: InteractionMessage): Record<string, unknown> {
    return {
      id: message.id,
      type: 20,
      channel_id: interaction.channelId,
      application_id: this.applicationId(),
      webhook_id: this.applicationId(),
      author: { id: this.applicationId(), username: "mediagate", discriminator: "0000", bot: true },
      content: message.content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      mention_everyone: false,
      mentions: [],
      mention_roles: [],
      attachments: [],
      embeds: [],
      pinned: false,
      flags: message.flags,
      interaction_metadata: {
        id: interaction.id,
        type: 2,
        user: {
          id: interaction.userId,
          username: `user${interaction.userId.slice(-4)}`,
          discriminator: "0",
          global_name: null,
          avatar: null,
        },
        authorizing_integration_owners: {},
      },
    };
  }
}

function notAllowed(): InteractionAnswer {
  return { status: 405, body: discordError(0, "405: Method Not Allowed") };
}

function invalid(field: string, code: string) {
  return {
    code: 50035,
    message: "Invalid Form Body",
    errors: { [field]: { _errors: [{ code, message: `${field} is invalid.` }] } },
  };
}
