import { EventEmitter } from "node:events";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { FakeCdn } from "./cdn.js";
import { componentsOf } from "./components.js";
import type { DiscordEditLimits } from "./edit-limits.js";
import { snowflake } from "./fixtures.js";
import { FakeInteractions } from "./interactions.js";
import { FakeReactions } from "./reactions.js";
import {
  discordError,
  type FailureInjection,
  type FailureKind,
  isRecord,
  type ParsedBody,
  parseBody,
  type RecordedCall,
  readBody,
  routeOf,
  sendJson,
} from "./requests.js";
import type { StoredMessage, World } from "./world.js";

const MessageCreatePath = /^\/channels\/\d+\/messages$/;
const MaxContentLength = 2000;
const MaxFiles = 10;

interface RestOptions {
  /** The token accepted now (it can be revoked). */
  readonly token: () => string;
  readonly world: World;
  /** Keeps the bytes of the bot's attachments and gives their URLs. */
  readonly cdn: FakeCdn;
  /** What `GET /gateway/bot` advertises. */
  readonly gatewayUrl: () => string;
  readonly nonceWindowMs: number;
  /** Called for each message the bot created, so the gateway can echo MESSAGE_CREATE. */
  readonly onCreated: (message: StoredMessage) => void;
  /** Called for each message the bot edited (MESSAGE_UPDATE). */
  readonly onEdited: (message: StoredMessage) => void;
  /** Called for each message the bot deleted (MESSAGE_DELETE). */
  readonly onDeleted: (message: StoredMessage) => void;
  /** Application commands and interaction answers. */
  readonly interactions: FakeInteractions;
}

/** Requests held back until {@link RequestGate.open} (to act while one is in flight). */
export interface RequestGate {
  /** Resolves when the first matching request arrived. */
  readonly reached: Promise<void>;
  /** Lets every held and later matching request through. */
  open(): void;
}

interface Gate {
  readonly method: string;
  readonly path: RegExp;
  readonly reach: () => void;
  readonly opened: Promise<void>;
}

interface PendingFailure extends FailureInjection {
  remaining: number;
}

interface Answer {
  readonly status: number;
  readonly body?: unknown;
  readonly headers?: Record<string, string>;
  readonly messageId?: string;
  readonly deduplicated?: boolean;
}

/**
 * The REST half of the fake: `GET /gateway/bot`, `GET /users/@me`, `GET /channels/:id`,
 * message creates (JSON or multipart, nonce + enforce_nonce honoured within a window, Discord's
 * 2000-character, 10-file and upload-size checks) and typing. Emits `call` for each recorded call.
 */
export class FakeRest extends EventEmitter {
  readonly calls: RecordedCall[] = [];
  readonly #failures: PendingFailure[] = [];
  readonly #nonces = new Map<string, { messageId: string; at: number }>();
  readonly #gates: Gate[] = [];
  /** The bot's own reactions on messages. */
  readonly reactions: FakeReactions;
  /** Edit pace enforced (see `FakeDiscord.limitEdits`); undefined: edits are unlimited. */
  editLimits: DiscordEditLimits | undefined;

  constructor(private readonly options: RestOptions) {
    super();
    this.reactions = new FakeReactions(options.world);
  }

  injectFailure(failure: FailureInjection): void {
    this.#failures.push({ ...failure, remaining: failure.times ?? 1 });
  }

  /** Drops the injected failures not used up yet: the next calls are answered normally. */
  clearFailures(): void {
    this.#failures.splice(0);
  }

  /** Holds requests matching `method` and `path` until the returned gate is opened. */
  gate(method: string, path: RegExp): RequestGate {
    let reach: () => void = () => {};
    let open: () => void = () => {};
    const reached = new Promise<void>((resolve) => {
      reach = resolve;
    });
    const opened = new Promise<void>((resolve) => {
      open = resolve;
    });
    const gate = { method, path, reach, opened };
    this.#gates.push(gate);
    return {
      reached,
      open: () => {
        this.#gates.splice(this.#gates.indexOf(gate), 1);
        open();
      },
    };
  }

  async handle(
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    query: URLSearchParams = new URLSearchParams(),
  ): Promise<void> {
    const method = req.method ?? "GET";
    const body = await readBody(req);
    if (
      !FakeInteractions.tokenless(path) &&
      req.headers.authorization !== `Bot ${this.options.token()}`
    ) {
      sendJson(res, 401, discordError(0, "401: Unauthorized"));
      return;
    }
    const gate = this.#gates.find((held) => held.method === method && held.path.test(path));
    if (gate) {
      gate.reach();
      await gate.opened;
    }
    let parsed: ParsedBody;
    try {
      parsed = await parseBody(req, body);
    } catch {
      sendJson(res, 400, discordError(50109, "The request body contains invalid JSON."));
      return;
    }
    const payload = isRecord(parsed.payload) ? parsed.payload : {};
    const nonce = typeof payload.nonce === "string" || typeof payload.nonce === "number";
    const failure = this.#takeFailure(method, path);
    const edited = method === "PATCH" ? /^\/channels\/(\d+)\/messages\/\d+$/.exec(path) : null;
    const limited = edited?.[1] === undefined ? undefined : this.editLimits?.check(edited[1]);
    let answer: Answer;
    if (limited !== undefined) answer = limited;
    else if (failure?.kind === "rate_limit") answer = rateLimited(failure);
    else if (failure?.kind === "server_error") answer = serverError(failure);
    else if (failure?.kind === "client_error") {
      answer = { status: failure.status ?? 400, body: invalidForm("attachments", "BASE_TYPE_BAD") };
    } else {
      answer = this.#route(method, path, query, parsed, payload);
      if (failure?.kind === "server_error_after_processing") {
        answer = { ...serverError(failure), ...pick(answer) };
      }
      if (failure?.kind === "connection_drop_after_processing") {
        answer = { status: 0, ...pick(answer) };
      }
    }
    this.calls.push({
      method,
      path,
      route: routeOf(path),
      query: Object.fromEntries(query),
      status: answer.status,
      payload: parsed.payload,
      files: parsed.files,
      nonce: nonce ? (payload.nonce as string | number) : undefined,
      enforceNonce: payload.enforce_nonce === true,
      injected: failure?.kind as FailureKind | undefined,
      messageId: answer.messageId,
      deduplicated: answer.deduplicated ?? false,
    });
    this.emit("call", this.calls.at(-1));
    if (answer.status === 0) {
      res.socket?.destroy();
    } else if (answer.status === 204) {
      res.writeHead(204);
      res.end();
    } else sendJson(res, answer.status, answer.body, answer.headers);
  }

  #takeFailure(method: string, path: string): PendingFailure | undefined {
    const failure = this.#failures.find(
      (candidate) =>
        candidate.remaining > 0 &&
        (candidate.method ?? "POST") === method &&
        (candidate.path ?? MessageCreatePath).test(path),
    );
    if (failure) failure.remaining -= 1;
    return failure;
  }

  #route(
    method: string,
    path: string,
    query: URLSearchParams,
    parsed: ParsedBody,
    payload: Record<string, unknown>,
  ): Answer {
    const { world } = this.options;
    if (method === "GET" && (path === "/gateway/bot" || path === "/gateway")) {
      return {
        status: 200,
        body: {
          url: this.options.gatewayUrl(),
          shards: 1,
          session_start_limit: {
            total: 1000,
            remaining: 999,
            reset_after: 14_400_000,
            max_concurrency: 1,
          },
        },
      };
    }
    if (method === "GET" && path === "/users/@me") return { status: 200, body: world.botUser };
    const interaction = this.options.interactions.route(method, path, parsed.payload, query);
    if (interaction !== undefined) return interaction;
    const reaction = this.reactions.route(method, path);
    if (reaction !== undefined) return reaction;
    const messageMatch = /^\/channels\/(\d+)\/messages\/(\d+)$/.exec(path);
    if (messageMatch?.[1] !== undefined && messageMatch[2] !== undefined) {
      return this.#message(method, messageMatch[1], messageMatch[2], payload);
    }
    const channelMatch = /^\/channels\/(\d+)(\/messages|\/typing)?$/.exec(path);
    const channelId = channelMatch?.[1];
    if (!channelMatch || channelId === undefined) {
      return { status: 404, body: discordError(0, "404: Not Found") };
    }
    const channel = world.channelJson(channelId);
    if (!channel) return { status: 404, body: discordError(10003, "Unknown Channel") };
    if (world.isDenied(channelId))
      return { status: 403, body: discordError(50001, "Missing Access") };
    if (method === "GET" && channelMatch[2] === undefined) return { status: 200, body: channel };
    if (method === "GET" && channelMatch[2] === "/messages")
      return this.#listMessages(channelId, query);
    if (method === "POST" && channelMatch[2] === "/typing") return { status: 204 };
    if (method === "POST" && channelMatch[2] === "/messages") {
      return this.#createMessage(channelId, parsed, payload);
    }
    return { status: 405, body: discordError(0, "405: Method Not Allowed") };
  }

  /**
   * `GET /channels/:id/messages` as Discord answers it: `limit` 1–100 (default 50); `after`
   * gives the messages right after that id, `before` those right before it, neither the
   * newest; the answer is always newest first.
   */
  #listMessages(channelId: string, query: URLSearchParams): Answer {
    const limit = Number(query.get("limit") ?? 50);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      return { status: 400, body: invalidForm("limit", "NUMBER_TYPE_MAX") };
    }
    const after = query.get("after");
    const before = query.get("before");
    const all = this.options.world.history(channelId);
    let picked: readonly Record<string, unknown>[];
    if (after !== null) {
      picked = all.filter((message) => snowflakeAfter(message.id, after)).slice(0, limit);
    } else if (before !== null) {
      picked = all.filter((message) => snowflakeBefore(message.id, before)).slice(-limit);
    } else picked = all.slice(-limit);
    return { status: 200, body: [...picked].reverse().map(restView) };
  }

  /**
   * `PATCH /channels/:id/messages/:id` (edit the content of the bot's own message) and
   * `DELETE` of it (204), as Discord answers: 404 Unknown Message (10008) for an id it does not
   * know, 403 (50005) for editing another user's message (deleting one needs Manage Messages,
   * which the bot is not given: 403 50013), 400 for content over 2000 characters, and 400
   * (50006) for an edit that would leave a message without content or attachments (Discord
   * refuses `{"content": ""}`, discord/discord-api-docs#7785).
   */
  #message(
    method: string,
    channelId: string,
    messageId: string,
    payload: Record<string, unknown>,
  ): Answer {
    const { world } = this.options;
    if (!world.channelJson(channelId)) {
      return { status: 404, body: discordError(10003, "Unknown Channel") };
    }
    if (world.isDenied(channelId))
      return { status: 403, body: discordError(50001, "Missing Access") };
    const mine = world.messages.find((m) => m.id === messageId && m.channelId === channelId);
    if (mine === undefined) {
      if (!world.isUsersMessage(channelId, messageId)) {
        return { status: 404, body: discordError(10008, "Unknown Message") };
      }
      return method === "PATCH"
        ? {
            status: 403,
            body: discordError(50005, "Cannot edit a message authored by another user"),
          }
        : { status: 403, body: discordError(50013, "Missing Permissions") };
    }
    if (method === "DELETE") {
      world.deleteMessage(channelId, messageId);
      this.options.onDeleted(mine);
      return { status: 204, messageId };
    }
    if (method !== "PATCH")
      return { status: 405, body: discordError(0, "405: Method Not Allowed") };
    const content = typeof payload.content === "string" ? payload.content : mine.content;
    if (content.length > MaxContentLength) {
      return { status: 400, body: invalidForm("content", "BASE_TYPE_MAX_LENGTH") };
    }
    const components = componentsOf(payload.components);
    if ("error" in components) {
      return { status: 400, body: invalidForm(components.error, "COMPONENT_INVALID") };
    }
    const rows =
      components.rows ?? (Array.isArray(mine.json.components) ? mine.json.components : []);
    if (content === "" && mine.files.length === 0 && rows.length === 0) {
      return { status: 400, body: discordError(50006, "Cannot send an empty message") };
    }
    const edited = world.editMessage(
      channelId,
      messageId,
      content,
      components.rows,
      typeof payload.content === "string" ? { allowed: payload.allowed_mentions } : undefined,
    );
    if (edited === undefined) return { status: 404, body: discordError(10008, "Unknown Message") };
    this.options.onEdited(edited);
    return { status: 200, body: edited.json, messageId };
  }

  #createMessage(channelId: string, parsed: ParsedBody, payload: Record<string, unknown>): Answer {
    const { world } = this.options;
    const content = typeof payload.content === "string" ? payload.content : "";
    if (content.length > MaxContentLength) {
      return { status: 400, body: invalidForm("content", "BASE_TYPE_MAX_LENGTH") };
    }
    if (parsed.files.length > MaxFiles) {
      return { status: 400, body: invalidForm("files", "BASE_TYPE_MAX_LENGTH") };
    }
    if (content === "" && parsed.files.length === 0) {
      return { status: 400, body: discordError(50006, "Cannot send an empty message") };
    }
    const components = componentsOf(payload.components);
    if ("error" in components) {
      return { status: 400, body: invalidForm(components.error, "COMPONENT_INVALID") };
    }
    const total = parsed.files.reduce((sum, file) => sum + file.bytes.length, 0);
    if (total > world.uploadLimit(channelId)) {
      return { status: 413, body: discordError(40005, "Request entity too large") };
    }
    const nonce = payload.nonce;
    const key =
      payload.enforce_nonce === true && (typeof nonce === "string" || typeof nonce === "number")
        ? `${channelId}:${nonce}`
        : undefined;
    const now = Date.now();
    const seen = key === undefined ? undefined : this.#nonces.get(key);
    if (seen && now - seen.at <= this.options.nonceWindowMs) {
      const original = world.messages.find((message) => message.id === seen.messageId);
      if (original) {
        return { status: 200, body: original.json, messageId: original.id, deduplicated: true };
      }
    }
    const message = this.#store(channelId, content, parsed, payload);
    if (key !== undefined) this.#nonces.set(key, { messageId: message.id, at: now });
    this.options.onCreated(message);
    return { status: 200, body: message.json, messageId: message.id };
  }

  #store(
    channelId: string,
    content: string,
    parsed: ParsedBody,
    payload: Record<string, unknown>,
  ): StoredMessage {
    const { world } = this.options;
    const id = snowflake();
    const found = world.channel(channelId);
    const guildId = found && found.kind !== "dm" ? found.guild.id : undefined;
    const reference = isRecord(payload.message_reference) ? payload.message_reference : undefined;
    const replyTo = typeof reference?.message_id === "string" ? reference.message_id : undefined;
    const nonce =
      typeof payload.nonce === "string" || typeof payload.nonce === "number"
        ? payload.nonce
        : undefined;
    const json: Record<string, unknown> = {
      id,
      channel_id: channelId,
      ...(guildId === undefined ? {} : { guild_id: guildId }),
      author: world.botUser,
      content,
      timestamp: new Date().toISOString(),
      edited_timestamp: null,
      tts: false,
      ...world.mentionJson(content, payload.allowed_mentions),
      attachments: parsed.files.map((file) =>
        this.options.cdn.add(channelId, {
          filename: file.filename,
          bytes: file.bytes,
          contentType: file.contentType,
        }),
      ),
      embeds: [],
      pinned: false,
      type: replyTo === undefined ? 0 : 19,
      flags: 0,
      components: rowsOf(payload.components),
      ...(nonce === undefined ? {} : { nonce }),
      ...(replyTo === undefined
        ? {}
        : { message_reference: { type: 0, message_id: replyTo, channel_id: channelId } }),
    };
    const message: StoredMessage = {
      id,
      channelId,
      guildId,
      content,
      nonce,
      replyTo,
      files: parsed.files,
      json,
    };
    world.messages.push(message);
    world.remember(channelId, json);
    return message;
  }
}

/** `a > b` for snowflake strings (numeric, no leading zeros). */
function snowflakeAfter(a: unknown, b: string): boolean {
  if (typeof a !== "string") return false;
  return a.length === b.length ? a > b : a.length > b.length;
}

/** `a < b` for snowflake strings. */
function snowflakeBefore(a: unknown, b: string): boolean {
  return typeof a === "string" && a !== b && !snowflakeAfter(a, b);
}

/** REST message objects carry no gateway-only fields (`member`, `channel_type`, `guild_id`). */
function restView(message: Record<string, unknown>): Record<string, unknown> {
  const { member: _member, channel_type: _type, guild_id: _guild, ...rest } = message;
  return rest;
}

function rateLimited(failure: FailureInjection): Answer {
  const seconds = failure.retryAfterSeconds ?? 0.2;
  return {
    status: 429,
    body: { message: "You are being rate limited.", retry_after: seconds, global: false },
    headers: { "retry-after": String(seconds), "x-ratelimit-scope": "user" },
  };
}

function serverError(failure: FailureInjection): Answer {
  return { status: failure.status ?? 500, body: discordError(0, "500: Internal Server Error") };
}

function pick(answer: Answer): Pick<Answer, "messageId" | "deduplicated"> {
  return {
    ...(answer.messageId === undefined ? {} : { messageId: answer.messageId }),
    ...(answer.deduplicated === undefined ? {} : { deduplicated: answer.deduplicated }),
  };
}

function invalidForm(field: string, code: string) {
  return {
    code: 50035,
    message: "Invalid Form Body",
    errors: { [field]: { _errors: [{ code, message: `${field} is invalid.` }] } },
  };
}

/** The action rows of a payload already checked by `componentsOf`. */
function rowsOf(value: unknown): unknown[] {
  const read = componentsOf(value);
  return "rows" in read ? (read.rows ?? []) : [];
}
