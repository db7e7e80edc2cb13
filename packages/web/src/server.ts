import { randomBytes } from "node:crypto";
import type { AddressInfo } from "node:net";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyCookie from "@fastify/cookie";
import fastifyCsrf from "@fastify/csrf-protection";
import fastifyStatic from "@fastify/static";
import { parseListenAddress, type Schedule } from "@mediagate/io";
import Fastify, { type FastifyReply, type FastifyRequest } from "fastify";
import { WebDefaults } from "./defaults.js";
import { answeredHostNames, hostNameOf } from "./hosts.js";
import { LiveHub } from "./live.js";
import { LoginLimiter } from "./login-limiter.js";
import { previewBody } from "./preview-body.js";
import { RefusalLog } from "./refusals.js";
import { type LoginSession, LoginSessions, sameSecret } from "./sessions.js";
import type { ConsoleSource } from "./source.js";
import type { WebActor } from "./types.js";

/** The few log methods the console uses (a pino logger has them). */
export interface WebLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Options of {@link startWebConsole}. */
export interface WebConsoleOptions {
  /**
   * `host:port`, an IPv6 host in brackets (`[::1]:8787`); port 0: any free port. One that is
   * not rejects with @mediagate/io's `ListenAddressError`.
   */
  readonly listen: string;
  /**
   * `Host` names answered besides the loopback names and the listen host (docs/web-console.md,
   * "DNS rebinding"); required when `listen` is a wildcard address (`0.0.0.0`, `::`).
   */
  readonly allowedHosts?: readonly string[] | undefined;
  /** The login secret (`mediagate web token`). */
  readonly token: string;
  readonly source: ConsoleSource;
  readonly logger: WebLogger;
  /** The clock of login sessions and of the waits after wrong tokens. */
  readonly now?: (() => number) | undefined;
  /** The refusal summary's timer (default @mediagate/io's `scheduleWithTimer`). */
  readonly schedule?: Schedule | undefined;
  /** Live update period while a browser watches (default `WebDefaults.liveIntervalMs`). */
  readonly liveIntervalMs?: number | undefined;
  /** How long a request may take to arrive in full (default `WebDefaults.requestTimeoutMs`). */
  readonly requestTimeoutMs?: number | undefined;
  /**
   * Cuts secrets out of a failed action's message before the browser is shown it (the
   * gateway's redaction, which knows its config's secrets). Default: the message as it is.
   */
  readonly redact?: ((text: string) => string) | undefined;
  /** The built front end (default the package's `dist/public`). */
  readonly publicDir?: string | undefined;
}

/** A running web console. */
export interface WebConsole {
  /** `http://host:port` it answers on. */
  readonly url: string;
  readonly live: LiveHub;
  close(): Promise<void>;
}

/** The pages of the console (each serves the app; the app shows the page of its path). */
export const Pages = [
  "/",
  "/sessions",
  "/containers",
  "/deliveries",
  "/logs",
  "/usage",
  "/approvals",
  "/tasks",
] as const;

/** What is served without a login: the login page and what it loads, nothing else. */
const Public = new Set(["/login", "/api/csrf", "/assets/login.js", "/assets/style.css"]);

declare module "fastify" {
  interface FastifyRequest {
    login?: LoginSession;
  }
}

/**
 * Starts the web console (docs/web-console.md) on `listen`: fastify, a login with the
 * operator's secret exchanged for an HttpOnly, SameSite=Strict session cookie (each address
 * waiting longer after each wrong token), CSRF tokens (bound to the login session) and an
 * Origin check on every state-changing request, only its own `Host` names answered, and
 * nothing but the login page served without a session. Refusals are counted and logged as one
 * summary line per period.
 * @throws WebHostsError when `listen` is a wildcard address and `allowedHosts` is not given.
 */
export async function startWebConsole(options: WebConsoleOptions): Promise<WebConsole> {
  const { host, port } = parseListenAddress(options.listen);
  const hostNames = answeredHostNames(options.listen, host, options.allowedHosts);
  const publicDir =
    options.publicDir ?? join(dirname(fileURLToPath(import.meta.url)), "..", "dist", "public");
  const sessions = new LoginSessions({ now: options.now });
  const source = options.source;
  const log = options.logger;
  const limiter = new LoginLimiter({ now: options.now });
  const refusals = new RefusalLog({ logger: log, now: options.now, schedule: options.schedule });
  const live = new LiveHub({
    source,
    intervalMs: options.liveIntervalMs,
    valid: (sessionId) => sessions.valid(sessionId),
    onError: (error) => log.warn({ err: error }, "web console: live update failed"),
  });
  const requestTimeoutMs = options.requestTimeoutMs ?? WebDefaults.requestTimeoutMs;
  const app = Fastify({
    logger: false,
    trustProxy: false,
    bodyLimit: 64 * 1024,
    requestTimeout: requestTimeoutMs,
    // Node looks for late requests this often (its default, 30 s, would double the bound).
    http: {
      headersTimeout: requestTimeoutMs,
      connectionsCheckingInterval: Math.max(10, Math.ceil(requestTimeoutMs / 4)),
    },
    // A stop closes the connections still open (a request half sent) instead of waiting for them.
    forceCloseConnections: true,
  });
  const cookieSecret = randomBytes(32).toString("hex");
  await app.register(fastifyCookie, { secret: cookieSecret });
  await app.register(fastifyCsrf, {
    sessionPlugin: "@fastify/cookie",
    cookieKey: WebDefaults.csrfCookie,
    cookieOpts: { path: "/", httpOnly: true, sameSite: "strict", signed: true },
    csrfOpts: { hmacKey: cookieSecret, userInfo: true },
    // The token is bound to the login session (or to the login form before there is one).
    getUserInfo: (request) => request.login?.id ?? "login",
    getToken: (request) => {
      const header = request.headers["x-csrf-token"];
      return typeof header === "string" ? header : undefined;
    },
  });
  await app.register(fastifyStatic, { root: publicDir, serve: false });

  // Security headers on every answer; no page may be framed (clickjacking).
  app.addHook("onSend", async (_request, reply, payload) => {
    reply.header("x-content-type-options", "nosniff");
    reply.header("x-frame-options", "DENY");
    reply.header("referrer-policy", "no-referrer");
    reply.header("cache-control", "no-store");
    if (!reply.hasHeader("content-security-policy")) {
      reply.header(
        "content-security-policy",
        "default-src 'self'; img-src 'self' blob:; media-src 'self'; style-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'",
      );
    }
    return payload;
  });

  app.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0] ?? "/";
    // DNS rebinding: only the console's own names are answered, on any listen address.
    if (!hostNames.has(hostNameOf(request.headers.host ?? ""))) {
      refusals.count("unknownHost", request.ip);
      return reply
        .code(421)
        .type("text/plain")
        .send("unknown host: this console answers only the names in its web.allowedHosts\n");
    }
    const login = sessions.touch(request.cookies[WebDefaults.sessionCookie]);
    if (login !== undefined) request.login = login;
    if (request.method !== "GET" && request.method !== "HEAD") {
      if (!sameOrigin(request)) {
        refusals.count("crossSite", request.ip);
        return reply.code(403).send({ error: "cross-site request refused" });
      }
    }
    if (login !== undefined || Public.has(path)) return;
    if (request.method === "GET" && (Pages as readonly string[]).includes(path)) {
      return reply.redirect("/login", 302);
    }
    return reply.code(401).send({ error: "log in first" });
  });

  /**
   * The request's Origin (or, lacking one, its Referer) is this console: reached directly
   * (`http:`) or through a TLS proxy that passes the `Host` on (`https:`).
   */
  function sameOrigin(request: FastifyRequest): boolean {
    const origin = originOf(request);
    return (
      origin !== undefined &&
      (origin.protocol === "http:" || origin.protocol === "https:") &&
      origin.host === request.headers.host
    );
  }

  const csrf = app.csrfProtection;
  const actorOf = (request: FastifyRequest): WebActor => ({
    id: request.login?.actor ?? "web:anonymous",
    address: request.ip,
  });

  app.get("/login", (_request, reply) => reply.sendFile("login.html"));
  app.get("/assets/:file", (request, reply) => {
    const { file } = request.params as { file: string };
    if (!/^[a-z-]+\.(js|css)$/.test(file)) return reply.code(404).send({ error: "not found" });
    return reply.sendFile(file);
  });
  for (const page of Pages) app.get(page, (_request, reply) => reply.sendFile("index.html"));

  app.get("/api/csrf", async (request, reply) => ({
    token: reply.generateCsrf({ userInfo: request.login?.id ?? "login" }),
  }));

  app.post("/login", { onRequest: csrf }, async (request, reply) => {
    // While its address waits, a login is not checked at all (the right token included).
    const waitMs = limiter.waitMs(request.ip);
    if (waitMs > 0) {
      refusals.count("waiting", request.ip);
      const seconds = Math.ceil(waitMs / 1000);
      return reply
        .code(429)
        .header("retry-after", String(seconds))
        .send({ error: `too many wrong tokens: try again in ${seconds} s` });
    }
    const body = request.body as { token?: unknown } | undefined;
    const given = typeof body?.token === "string" ? body.token : "";
    if (!sameSecret(given, options.token)) {
      refusals.count("wrongToken", request.ip);
      const nextWaitMs = limiter.failed(request.ip);
      if (nextWaitMs > 0) reply.header("retry-after", String(Math.ceil(nextWaitMs / 1000)));
      return reply.code(401).send({ error: "wrong token" });
    }
    limiter.succeeded(request.ip);
    const login = sessions.create(request.ip);
    log.info({ by: login.actor, address: request.ip }, "web console: logged in");
    reply.setCookie(WebDefaults.sessionCookie, login.id, {
      path: "/",
      httpOnly: true,
      sameSite: "strict",
      // The page was reached over TLS (a proxy in front): the cookie never crosses plain HTTP.
      secure: originOf(request)?.protocol === "https:",
    });
    return reply.code(204).send();
  });

  app.post("/logout", { onRequest: csrf }, async (request, reply) => {
    const login = request.login;
    if (login !== undefined) {
      sessions.end(login.id);
      live.endSession(login.id);
      log.info({ by: login.actor, address: request.ip }, "web console: logged out");
    }
    reply.clearCookie(WebDefaults.sessionCookie, { path: "/" });
    return reply.code(204).send();
  });

  app.get("/api/overview", () => source.overview());
  app.get("/api/sessions", () => source.sessions());
  app.get("/api/containers", () => source.containers());
  app.get("/api/deliveries", () => source.deliveries(WebDefaults.deliveries));
  app.get(
    "/api/usage",
    async () => (await source.usage?.(WebDefaults.usageDays)) ?? { profiles: [] },
  );
  app.get("/api/approvals", async () => (await source.approvals?.()) ?? { approvals: [] });
  app.get("/api/tasks", async () => (await source.tasks?.()) ?? []);
  app.get("/api/logs", (request) => {
    const q = request.query as Record<string, string | undefined>;
    const after = Number(q.after);
    return source.logs({
      level: q.level || undefined,
      session: q.session || undefined,
      after: Number.isFinite(after) ? after : undefined,
      limit: WebDefaults.logLimit,
    });
  });

  app.get("/api/preview/:reply/:index", async (request, reply) => {
    const params = request.params as { reply: string; index: string };
    const head = (request.query as { head?: string }).head === "1";
    const index = Number(params.index);
    if (!Number.isSafeInteger(index) || index < 0)
      return reply.code(404).send({ error: "no such file" });
    const file = await source.preview(
      params.reply,
      index,
      head ? WebDefaults.textHeadBytes : WebDefaults.previewMaxBytes,
    );
    if (file === undefined) return reply.code(404).send({ error: "no such delivered file" });
    reply.raw.on("close", () => void file.close());
    const inline = /^(image|audio|video)\//.test(file.mime);
    const type = file.mime.startsWith("text/")
      ? "text/plain; charset=utf-8"
      : inline
        ? file.mime
        : "application/octet-stream";
    // Whatever the file holds, it runs nothing (an SVG's script, an HTML file).
    reply.header(
      "content-security-policy",
      "default-src 'none'; style-src 'unsafe-inline'; sandbox",
    );
    if (!inline && !head) reply.header("content-disposition", "attachment");
    reply.header("content-length", String(file.size));
    const body = previewBody(file.stream, file.size, (sent) =>
      log.warn(
        { reply: params.reply, index, sent, size: file.size },
        "web console: a previewed file shrank while it was sent; the answer was cut off",
      ),
    );
    return reply.type(type).send(body);
  });

  app.get("/api/events", (request, reply) => {
    const login = request.login!;
    reply.hijack();
    reply.raw.writeHead(200, {
      "content-type": "text/event-stream",
      "cache-control": "no-store",
      connection: "keep-alive",
      "x-content-type-options": "nosniff",
    });
    reply.raw.write("retry: 2000\n\n");
    live.add(login.id, reply.raw);
  });

  const action = async (
    request: FastifyRequest,
    reply: FastifyReply,
    name: string,
    run: (by: WebActor) => Promise<unknown>,
  ) => {
    const by = actorOf(request);
    const body = (request.body ?? {}) as Record<string, unknown>;
    log.info(
      { by: by.id, address: by.address, action: name, ...fieldsOf(body) },
      `web console: ${name}`,
    );
    try {
      return await run(by);
    } catch (error) {
      log.warn({ err: error, by: by.id, action: name }, `web console: ${name} failed`);
      const message = error instanceof Error ? error.message : String(error);
      return reply.code(500).send({ error: options.redact?.(message) ?? message });
    }
  };

  app.post("/api/sessions/stop", { onRequest: csrf }, (request, reply) => {
    const key = sessionKeyOf(request);
    if (key === undefined) return reply.code(400).send({ error: "name a sessionKey" });
    return action(request, reply, "stop", async (by) => ({ text: await source.stopTurn(key, by) }));
  });
  app.post("/api/slots/reset", { onRequest: csrf }, (request, reply) => {
    const key = sessionKeyOf(request);
    if (key === undefined) return reply.code(400).send({ error: "name a sessionKey" });
    const confirm = (request.body as { confirm?: unknown }).confirm === true;
    return action(request, reply, "reset", (by) => source.resetSlot(key, confirm, by));
  });
  app.post("/api/tasks/action", { onRequest: csrf }, (request, reply) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const { profile, id, action: name } = body;
    if (
      typeof profile !== "string" ||
      typeof id !== "string" ||
      (name !== "run" && name !== "pause" && name !== "resume") ||
      source.taskAction === undefined
    ) {
      return reply.code(400).send({ error: "name a profile, a task id and run, pause or resume" });
    }
    return action(request, reply, `task ${name}`, async (by) => ({
      text: await source.taskAction?.(profile, id, name, by),
    }));
  });
  app.post("/api/orphans/reap", { onRequest: csrf }, (request, reply) =>
    action(request, reply, "reap", async (by) => ({ text: await source.reapOrphans(by) })),
  );

  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: "not found" }));

  await app.listen({ host, port });
  const address = app.server.address() as AddressInfo;
  const shownHost = address.family === "IPv6" ? `[${address.address}]` : address.address;
  return {
    url: `http://${shownHost}:${address.port}`,
    live,
    close: async () => {
      live.close();
      await app.close();
      refusals.close();
    },
  };
}

/** The URL a request's Origin (or, lacking one, its Referer) names, if it names one. */
function originOf(request: FastifyRequest): URL | undefined {
  const claimed = request.headers.origin ?? request.headers.referer;
  if (claimed === undefined || claimed === "null") return undefined;
  try {
    return new URL(claimed);
  } catch {
    return undefined;
  }
}

function sessionKeyOf(request: FastifyRequest): string | undefined {
  const key = (request.body as { sessionKey?: unknown } | undefined)?.sessionKey;
  return typeof key === "string" && key !== "" && key.length <= 1024 ? key : undefined;
}

/** The loggable fields of an action's body (its session key and confirmation). */
function fieldsOf(body: Record<string, unknown>): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  if (typeof body.sessionKey === "string") fields.sessionKey = body.sessionKey;
  if (typeof body.confirm === "boolean") fields.confirm = body.confirm;
  if (typeof body.profile === "string") fields.profile = body.profile;
  if (typeof body.id === "string") fields.taskId = body.id;
  return fields;
}
