import { EventEmitter } from "node:events";
import type { Server } from "node:http";
import { type RawData, type WebSocket, WebSocketServer } from "ws";
import { guildCreateObject, snowflake } from "./fixtures.js";
import { isRecord } from "./requests.js";
import type { World } from "./world.js";

/** Gateway opcodes the fake speaks. */
export const Op = {
  Dispatch: 0,
  Heartbeat: 1,
  Identify: 2,
  Resume: 6,
  InvalidSession: 9,
  Hello: 10,
  HeartbeatAck: 11,
} as const;

/** Gateway intent bits the fake enforces on MESSAGE_CREATE. */
export const Intent = {
  Guilds: 1 << 0,
  GuildMessages: 1 << 9,
  DirectMessages: 1 << 12,
  MessageContent: 1 << 15,
} as const;

interface Dispatched {
  readonly s: number;
  readonly t: string;
  readonly d: unknown;
}

/** One gateway session: survives a dropped socket, so RESUME can replay what was missed. */
interface Session {
  readonly id: string;
  readonly intents: number;
  seq: number;
  readonly log: Dispatched[];
  socket: WebSocket | undefined;
}

/**
 * Per-session view of a dispatch: return the payload this session should get (for intents),
 * or undefined to withhold it.
 */
export type DispatchView = (intents: number) => unknown;

interface GatewayOptions {
  readonly server: Server;
  readonly path: string;
  /** The token accepted now (it can be revoked). */
  readonly token: () => string;
  readonly world: World;
  readonly heartbeatIntervalMs: number;
  /** The privileged Message Content intent is enabled in the portal: else IDENTIFY gets 4014. */
  readonly messageContentEnabled: boolean;
  readonly resumeUrl: () => string;
}

/**
 * The websocket half of the fake (JSON encoding, no compression): HELLO, IDENTIFY → READY +
 * GUILD_CREATE, heartbeats, RESUME → replay + RESUMED (or op 9 Invalid Session for a session
 * it does not know), dispatches. Emits `identify`, `resume`, `invalidSession` and `op` (every
 * payload received, token removed).
 */
export class FakeGateway extends EventEmitter {
  readonly sessions: Session[] = [];
  identifyCount = 0;
  /**
   * The most gateway sessions with a socket open at once so far: more than 1 means two
   * processes held the bot's connection together (Discord allows it and delivers each event to
   * both; a cluster must not: docs/cluster.md).
   */
  maxLiveSessions = 0;
  resumeCount = 0;
  /** RESUMEs answered with op 9 Invalid Session (`d: false`). */
  invalidSessionCount = 0;
  readonly #wss: WebSocketServer;
  /** Sockets waiting for HELLO while the gateway is held; undefined when not held. */
  #held: WebSocket[] | undefined;
  /** Sessions whose GUILD_CREATEs wait ({@link holdGuilds}); undefined when not held. */
  #guildsHeld: Session[] | undefined;

  constructor(private readonly options: GatewayOptions) {
    super();
    this.#wss = new WebSocketServer({ server: options.server, path: options.path });
    this.#wss.on("connection", (socket) => this.#accept(socket));
  }

  /** Send a dispatch to every session; while a session's socket is down it is queued for RESUME. */
  dispatch(t: string, view: DispatchView): number {
    let delivered = 0;
    for (const session of this.sessions) {
      const d = view(session.intents);
      if (d === undefined) continue;
      this.#send(session, t, d);
      delivered += 1;
    }
    return delivered;
  }

  /** Close every client socket without a close frame (code 1006), keeping sessions resumable. */
  dropSocket(): void {
    for (const session of this.sessions) {
      session.socket?.terminate();
      session.socket = undefined;
    }
  }

  /**
   * Discord forgets every session (it expired while the socket was down): their sockets are
   * dropped (1006), a RESUME of them is answered with op 9 Invalid Session (`d: false`), and
   * what is dispatched until the next IDENTIFY reaches no one and is never replayed.
   */
  invalidateSessions(): void {
    for (const session of this.sessions.splice(0)) session.socket?.terminate();
  }

  /** Close every client socket with a close frame (e.g. 4004), ending their sessions. */
  closeAll(code: number, reason: string): void {
    for (const session of this.sessions) {
      session.socket?.close(code, reason);
      session.socket = undefined;
    }
  }

  /**
   * The next sessions get READY but their GUILD_CREATEs wait until {@link releaseGuilds}: a
   * bot in many servers, or a server that is slow to load, gets them long after READY.
   */
  holdGuilds(): void {
    this.#guildsHeld ??= [];
  }

  /** Sends the GUILD_CREATEs held back, and those of later sessions at once. */
  releaseGuilds(): void {
    const waiting = this.#guildsHeld ?? [];
    this.#guildsHeld = undefined;
    for (const session of waiting) this.#sendGuilds(session);
  }

  /** New sockets are accepted but get no HELLO until {@link release}. */
  hold(): void {
    this.#held ??= [];
  }

  /** Greets the sockets that connected while held, and every later one at once. */
  release(): void {
    const waiting = this.#held ?? [];
    this.#held = undefined;
    for (const socket of waiting) if (socket.readyState === 1) this.#hello(socket);
  }

  get connected(): boolean {
    return this.sessions.some((session) => session.socket !== undefined);
  }

  async close(): Promise<void> {
    for (const client of this.#wss.clients) client.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }

  #accept(socket: WebSocket): void {
    if (this.#held) this.#held.push(socket);
    else this.#hello(socket);
    socket.on("message", (data) => this.#onMessage(socket, data));
    socket.on("close", () => {
      for (const session of this.sessions) {
        if (session.socket === socket) session.socket = undefined;
      }
    });
  }

  #hello(socket: WebSocket): void {
    socket.send(
      JSON.stringify({
        op: Op.Hello,
        d: { heartbeat_interval: this.options.heartbeatIntervalMs },
        s: null,
        t: null,
      }),
    );
  }

  #onMessage(socket: WebSocket, data: RawData): void {
    let payload: unknown;
    try {
      payload = JSON.parse(data.toString());
    } catch {
      socket.close(4002, "Error while decoding payload.");
      return;
    }
    if (!isRecord(payload) || typeof payload.op !== "number") return;
    const d = isRecord(payload.d) ? payload.d : {};
    const { token: _token, ...withoutToken } = d;
    this.emit("op", { op: payload.op, d: isRecord(payload.d) ? withoutToken : payload.d });
    switch (payload.op) {
      case Op.Heartbeat:
        socket.send(JSON.stringify({ op: Op.HeartbeatAck, d: null, s: null, t: null }));
        return;
      case Op.Identify:
        this.#identify(socket, d);
        return;
      case Op.Resume:
        this.#resume(socket, d);
        return;
      default:
        return;
    }
  }

  /** Gateway sessions with a socket open now. */
  get liveSessions(): number {
    return this.sessions.filter((session) => session.socket !== undefined).length;
  }

  #countLive(): void {
    this.maxLiveSessions = Math.max(this.maxLiveSessions, this.liveSessions);
  }

  #identify(socket: WebSocket, d: Record<string, unknown>): void {
    if (d.token !== this.options.token()) {
      socket.close(4004, "Authentication failed.");
      return;
    }
    const intents = typeof d.intents === "number" ? d.intents : 0;
    if ((intents & Intent.MessageContent) !== 0 && !this.options.messageContentEnabled) {
      socket.close(4014, "Disallowed intent(s).");
      return;
    }
    const session: Session = { id: snowflake(), intents, seq: 0, log: [], socket };
    this.sessions.push(session);
    this.identifyCount += 1;
    this.#countLive();
    const { world } = this.options;
    this.#send(session, "READY", {
      v: 10,
      user: world.botUser,
      guilds: world.guilds.map((guild) => ({ id: guild.id, unavailable: true })),
      session_id: session.id,
      resume_gateway_url: this.options.resumeUrl(),
      shard: [0, 1],
      application: { id: world.botUser.id, flags: 0 },
      private_channels: [],
      presences: [],
      relationships: [],
      guild_join_requests: [],
      geo_ordered_rtc_regions: [],
    });
    if (this.#guildsHeld === undefined) this.#sendGuilds(session);
    else this.#guildsHeld.push(session);
    this.emit("identify", session.id);
  }

  /** A GUILD_CREATE for each guild, as Discord sends them after READY. */
  #sendGuilds(session: Session): void {
    const { world } = this.options;
    for (const guild of world.guilds) {
      const created = guildCreateObject(guild, world.botUser, (id) => world.botJoinedAt(id));
      this.#send(session, "GUILD_CREATE", created);
    }
  }

  #resume(socket: WebSocket, d: Record<string, unknown>): void {
    const session = this.sessions.find((candidate) => candidate.id === d.session_id);
    if (!session || d.token !== this.options.token()) {
      this.invalidSessionCount += 1;
      socket.send(JSON.stringify({ op: Op.InvalidSession, d: false, s: null, t: null }));
      this.emit("invalidSession");
      return;
    }
    session.socket = socket;
    this.#countLive();
    const seen = typeof d.seq === "number" ? d.seq : 0;
    for (const event of session.log) {
      if (event.s > seen) socket.send(JSON.stringify({ op: Op.Dispatch, ...event }));
    }
    this.resumeCount += 1;
    this.#send(session, "RESUMED", {});
    this.emit("resume", session.id);
  }

  #send(session: Session, t: string, d: unknown): void {
    session.seq += 1;
    const event: Dispatched = { s: session.seq, t, d };
    session.log.push(event);
    if (session.socket?.readyState === 1) {
      session.socket.send(JSON.stringify({ op: Op.Dispatch, ...event }));
    }
  }
}
