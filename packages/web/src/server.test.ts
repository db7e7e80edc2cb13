import { Agent, request } from "node:http";
import { connect } from "node:net";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { type ManualClock, manualClock } from "../../../test-support/clock.js";
import {
  startWebConsole,
  type WebConsole,
  type WebConsoleOptions,
  type WebLogger,
} from "./server.js";
import type { ConsoleSource } from "./source.js";

const Token = "the-console-token-the-console-token-0123";
const source = { sessions: () => [] } as unknown as ConsoleSource;

interface Line {
  readonly level: "info" | "warn";
  readonly fields: Record<string, unknown>;
  readonly msg: string;
}

interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: 16 });

/** One HTTP request with the headers as given (Host included), from `localAddress`. */
function call(
  url: string,
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    localAddress?: string;
  } = {},
): Promise<Answer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const sent = request(
      {
        host: hostname,
        port,
        path,
        method: options.method ?? "GET",
        headers: options.headers,
        ...(options.localAddress === undefined
          ? { agent }
          : { localAddress: options.localAddress }),
      },
      (answer) => {
        let body = "";
        answer.setEncoding("utf8");
        answer.on("data", (chunk: string) => {
          body += chunk;
        });
        answer.on("end", () =>
          resolve({ status: answer.statusCode ?? 0, headers: answer.headers, body }),
        );
      },
    );
    sent.on("error", reject);
    sent.end(options.body);
  });
}

/** The login form of one client: its CSRF token and cookie, then POST /login with a token. */
async function loginForm(url: string, localAddress?: string) {
  const form = await call(url, "/api/csrf", localAddress === undefined ? {} : { localAddress });
  const csrf = (JSON.parse(form.body) as { token: string }).token;
  const cookie = [form.headers["set-cookie"] ?? []]
    .flat()
    .map((c) => c.split(";")[0])
    .join("; ");
  return (token: string) =>
    call(url, "/login", {
      method: "POST",
      headers: {
        origin: url,
        cookie,
        "x-csrf-token": csrf,
        "content-type": "application/json",
      },
      body: JSON.stringify({ token }),
      ...(localAddress === undefined ? {} : { localAddress }),
    });
}

describe("the web console's server", () => {
  let web: WebConsole | undefined;
  let clock: ManualClock;
  let lines: Line[];

  afterEach(async () => {
    await web?.close();
    web = undefined;
  });

  async function start(
    listen = "127.0.0.1:0",
    allowedHosts?: readonly string[],
    more: Partial<WebConsoleOptions> = {},
  ) {
    clock = manualClock();
    lines = [];
    const logger: WebLogger = {
      info: (fields, msg) => void lines.push({ level: "info", fields: { ...fields }, msg }),
      warn: (fields, msg) => void lines.push({ level: "warn", fields: { ...fields }, msg }),
    };
    web = await startWebConsole({
      listen,
      token: Token,
      source,
      logger,
      now: clock.now,
      schedule: clock.schedule,
      ...(allowedHosts === undefined ? {} : { allowedHosts }),
      ...more,
    });
    return web.url;
  }

  const warnings = () => lines.filter((l) => l.level === "warn");

  it("makes a flood of wrong logins from one address wait longer after each, logged as one summary line", async () => {
    const url = await start();
    const login = await loginForm(url);
    const first = [];
    for (let i = 0; i < 5; i += 1) first.push(await login("wrong"));
    expect(first.map((a) => [a.status, a.headers["retry-after"]])).toEqual([
      [401, undefined],
      [401, undefined],
      [401, undefined],
      [401, undefined],
      [401, "1"],
    ]);
    // The flood: answered at once, none of it checked against the token.
    const flood: Answer[] = [];
    for (let batch = 0; batch < 100; batch += 1) {
      flood.push(...(await Promise.all(Array.from({ length: 20 }, () => login("wrong")))));
    }
    expect(new Set(flood.map((a) => `${a.status} ${a.headers["retry-after"]}`))).toEqual(
      new Set(["429 1"]),
    );
    // Each wrong token after a wait doubles the next one.
    const waits: unknown[] = [];
    for (const waitMs of [1_000, 2_000, 4_000]) {
      clock.advance(waitMs);
      const answer = await login("wrong");
      waits.push([answer.status, answer.headers["retry-after"]]);
      expect((await login("wrong")).status).toBe(429);
    }
    expect(waits).toEqual([
      [401, "2"],
      [401, "4"],
      [401, "8"],
    ]);
    expect(warnings()).toEqual([]);

    // The summary comes when its period (WebDefaults.refusalSummaryMs) has passed since the first refusal.
    clock.advance(60_000 - 7_000);
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]?.msg).toBe(
      "web console: refused 2011 logins (8 wrong tokens, 2003 while their address waited) from 1 address in the last 60 s",
    );
    expect(warnings()[0]?.fields).toMatchObject({
      refused: { wrongToken: 8, waiting: 2003, crossSite: 0, unknownHost: 0 },
      top: [{ address: "127.0.0.1", refused: 2011 }],
    });
  });

  it("refuses even the right token while the address waits, and lets it in once the wait is over", async () => {
    const url = await start();
    const login = await loginForm(url);
    for (let i = 0; i < 5; i += 1) await login("wrong");
    const early = await login(Token);
    expect([early.status, early.headers["retry-after"]]).toEqual([429, "1"]);
    expect(early.headers["set-cookie"]).toBeUndefined();

    clock.advance(1_000);
    const late = await login(Token);
    expect(late.status).toBe(204);
    const session = [late.headers["set-cookie"] ?? []].flat().find((c) => c.startsWith("mg_"));
    expect(session).toMatch(/^mg_session=/);
    const sessions = await call(url, "/api/sessions", {
      headers: { cookie: session?.split(";")[0] ?? "" },
    });
    expect([sessions.status, sessions.body]).toEqual([200, "[]"]);
    // The login forgot the address's wrong tokens: four more are answered at once again.
    for (let i = 0; i < 4; i += 1) {
      const again = await login("wrong");
      expect([again.status, again.headers["retry-after"]]).toEqual([401, undefined]);
    }
  });

  it("cuts secrets out of a failed action's message before the browser is shown it", async () => {
    const failing = {
      ...source,
      stopTurn: async () => {
        throw new Error("could not reach postgres://mg:hunter2-secret@db.internal/mediagate");
      },
    } as unknown as ConsoleSource;
    const url = await start("127.0.0.1:0", undefined, {
      source: failing,
      redact: (text) => text.replaceAll("hunter2-secret", "<redacted>"),
    });
    const form = await call(url, "/api/csrf");
    const csrf = (JSON.parse(form.body) as { token: string }).token;
    const csrfCookie = [form.headers["set-cookie"] ?? []].flat().map((c) => c.split(";")[0]);
    const login = await call(url, "/login", {
      method: "POST",
      headers: {
        origin: url,
        cookie: csrfCookie.join("; "),
        "x-csrf-token": csrf,
        "content-type": "application/json",
      },
      body: JSON.stringify({ token: Token }),
    });
    const session = [login.headers["set-cookie"] ?? []].flat().map((c) => c.split(";")[0]);
    // The CSRF token is bound to the session: the page asks for a new one once logged in.
    const cookie = [...csrfCookie, ...session].join("; ");
    const ours = await call(url, "/api/csrf", { headers: { cookie } });
    const stopped = await call(url, "/api/sessions/stop", {
      method: "POST",
      headers: {
        origin: url,
        cookie,
        "x-csrf-token": (JSON.parse(ours.body) as { token: string }).token,
        "content-type": "application/json",
      },
      body: JSON.stringify({ sessionKey: "telegram:1" }),
    });
    expect([stopped.status, JSON.parse(stopped.body)]).toEqual([
      500,
      { error: "could not reach postgres://mg:<redacted>@db.internal/mediagate" },
    ]);
  });

  /** Logs in as a browser would; answers the session's cookie header. */
  async function loggedIn(url: string): Promise<string> {
    const login = await (await loginForm(url))(Token);
    return [login.headers["set-cookie"] ?? []]
      .flat()
      .map((c) => c.split(";")[0])
      .join("; ");
  }

  /** GET `path` to its end or its cut: the bytes that came and whether the body was whole. */
  function download(url: string, path: string, cookie: string) {
    const { hostname, port } = new URL(url);
    return new Promise<{ headers: Record<string, unknown>; bytes: number; complete: boolean }>(
      (resolve, reject) => {
        const sent = request({ host: hostname, port, path, headers: { cookie } }, (answer) => {
          let bytes = 0;
          answer.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
          });
          answer.on("error", () => {}); // "aborted": told by `complete`
          answer.on("close", () =>
            resolve({ headers: answer.headers, bytes, complete: answer.complete }),
          );
        });
        sent.on("error", reject);
        sent.end();
      },
    );
  }

  it("answers a preview with its length, and cuts it off when the file shrank after it was opened", async () => {
    let served = Buffer.alloc(100, "a");
    const previewing = {
      ...source,
      preview: async () => ({
        mime: "text/plain",
        size: 100, // what the file held when it was opened and checked
        stream: Readable.from([served]),
        close: async () => {},
      }),
    } as unknown as ConsoleSource;
    const url = await start("127.0.0.1:0", undefined, { source: previewing });
    const cookie = await loggedIn(url);

    const whole = await download(url, "/api/preview/r1/0", cookie);
    expect(whole).toMatchObject({ bytes: 100, complete: true });
    expect(whole.headers["content-length"]).toBe("100");

    served = Buffer.alloc(40, "a"); // truncated since: fewer bytes than announced
    const shrunk = await download(url, "/api/preview/r1/0", cookie);
    expect(shrunk.bytes).toBe(40);
    expect(shrunk.complete).toBe(false);
    expect(warnings().map((line) => line.msg)).toContain(
      "web console: a previewed file shrank while it was sent; the answer was cut off",
    );
  });

  it("makes only the address that sent the wrong tokens wait", async () => {
    const url = await start();
    const login = await loginForm(url);
    for (let i = 0; i < 5; i += 1) await login("wrong");
    expect((await login(Token)).status).toBe(429);
    const other = await loginForm(url, "127.0.0.2");
    expect((await other(Token)).status).toBe(204);
  });

  it("counts cross-site requests instead of logging each", async () => {
    const url = await start();
    for (let i = 0; i < 3; i += 1) {
      const answer = await call(url, "/logout", {
        method: "POST",
        headers: { origin: "http://evil.example", "content-type": "application/json" },
        body: "{}",
      });
      expect(answer.status).toBe(403);
    }
    expect(warnings()).toEqual([]);
    await web?.close();
    web = undefined;
    expect(warnings().map((l) => l.msg)).toEqual([
      "web console: refused 3 cross-site requests from 1 address in the last 1 s",
    ]);
  });

  it("answers only its own host names on a non-loopback listen address", async () => {
    const url = await start("0.0.0.0:0", ["console.example"]);
    const port = new URL(url).port;
    const status = async (host: string) =>
      (await call(`http://127.0.0.1:${port}`, "/login", { headers: { host } })).status;
    expect(await status(`evil.example:${port}`)).toBe(421);
    expect(await status("evil.example")).toBe(421);
    expect(await status(`console.example:${port}`)).toBe(200);
    expect(await status("CONSOLE.example")).toBe(200);
    expect(await status(`127.0.0.1:${port}`)).toBe(200);
    expect(await status(`localhost:${port}`)).toBe(200);
    // Its answers are counted like every refusal.
    await web?.close();
    web = undefined;
    expect(warnings().map((l) => l.msg)).toEqual([
      "web console: refused 2 requests for an unknown host from 1 address in the last 1 s",
    ]);
  });

  it("on loopback answers the loopback names and no other", async () => {
    const url = await start("127.0.0.1:0");
    const port = new URL(url).port;
    const status = async (host: string) =>
      (await call(url, "/login", { headers: { host } })).status;
    expect(await status(`127.0.0.1:${port}`)).toBe(200);
    expect(await status(`[::1]:${port}`)).toBe(200);
    expect(await status(`rebound.example:${port}`)).toBe(421);
  });

  it("does not start on a wildcard address that names none of its hosts", async () => {
    await expect(start("0.0.0.0:0")).rejects.toThrow(
      /web\.listen "0\.0\.0\.0:0" answers on every address.*web\.allowedHosts/,
    );
    await expect(start("0.0.0.0:0", ["not a name"])).rejects.toThrow(
      /web\.allowedHosts: "not a name" is not a host name/,
    );
  });

  it("logs in through a TLS proxy: an https Origin of its own name, and a Secure cookie", async () => {
    const url = await start("0.0.0.0:0", ["console.example"]);
    const port = new URL(url).port;
    const local = `http://127.0.0.1:${port}`;
    const host = { host: "console.example" };
    const form = await call(local, "/api/csrf", { headers: host });
    const csrf = (JSON.parse(form.body) as { token: string }).token;
    const cookie = [form.headers["set-cookie"] ?? []]
      .flat()
      .map((c) => c.split(";")[0])
      .join("; ");
    const login = (origin: string) =>
      call(local, "/login", {
        method: "POST",
        headers: {
          ...host,
          origin,
          cookie,
          "x-csrf-token": csrf,
          "content-type": "application/json",
        },
        body: JSON.stringify({ token: Token }),
      });
    expect((await login("https://evil.example")).status).toBe(403);
    const answer = await login("https://console.example");
    expect(answer.status).toBe(204);
    const session = [answer.headers["set-cookie"] ?? []]
      .flat()
      .find((c) => c.startsWith("mg_session="));
    expect(session?.split("; ").slice(1).sort()).toEqual([
      "HttpOnly",
      "Path=/",
      "SameSite=Strict",
      "Secure",
    ]);
    // Over plain HTTP the cookie cannot be Secure (the browser would not send it back).
    const plain = await loginForm(local);
    const over = await plain(Token);
    const plainSession = [over.headers["set-cookie"] ?? []]
      .flat()
      .find((c) => c.startsWith("mg_session="));
    expect(plainSession).not.toMatch(/Secure/);
  });

  it("drops a request whose body does not arrive in time (a slow client holds no connection)", async () => {
    const url = await start("127.0.0.1:0", undefined, { requestTimeoutMs: 200 });
    const { hostname, port } = new URL(url);
    const form = await call(url, "/api/csrf");
    const csrf = (JSON.parse(form.body) as { token: string }).token;
    const cookie = [form.headers["set-cookie"] ?? []]
      .flat()
      .map((c) => c.split(";")[0])
      .join("; ");
    const socket = connect(Number(port), hostname);
    // Dropped by the server: a reset read after its 408 is the point, not a failure.
    socket.on("error", () => {});
    let answer = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => {
      answer += chunk;
    });
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    // Headers in full, then one byte of a body announced as 1,000: the slowloris's way.
    socket.write(
      [
        "POST /login HTTP/1.1",
        `Host: ${hostname}:${port}`,
        `Origin: ${url}`,
        `Cookie: ${cookie}`,
        `X-CSRF-Token: ${csrf}`,
        "Content-Type: application/json",
        "Content-Length: 1000",
        "",
        "{",
      ].join("\r\n"),
    );
    try {
      await closed;
    } finally {
      socket.destroy();
    }
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("stops at once while a client is half-way through sending a request", async () => {
    const url = await start();
    const { hostname, port } = new URL(url);
    const socket = connect(Number(port), hostname);
    // The server's stop destroys the connection: the client may read a reset (ECONNRESET),
    // which is the point, not a failure of the test.
    socket.on("error", () => {});
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    await new Promise<void>((resolve) => socket.on("connect", () => resolve()));
    socket.write(`GET /login HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`);
    try {
      await web?.close();
      web = undefined;
      await closed;
    } finally {
      socket.destroy();
    }
    expect(socket.destroyed).toBe(true);
  });
});
