import { once } from "node:events";
import {
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";

/** When a fault strikes: before the request is forwarded, or after the upstream answered it. */
export type FaultStage = "before" | "after";

/**
 * What the proxy does instead of passing a request through.
 *
 * - `respond` answers `status` with `body` (JSON unless a string). `before`: the upstream never
 *   sees the request. `after`: the upstream handled it (a message was posted) and its answer is
 *   replaced, as a gateway in front of a server answers 502 when the server's reply was lost.
 * - `reset` destroys the client's connection. `before`: as soon as the request head arrives,
 *   without reading the body (a large upload is cut off mid-body; a small body may already be
 *   in the kernel's buffers, so the client cannot tell). `after`: once the upstream answered.
 * - `hang` never answers (the connection stays open until the client gives up or the proxy
 *   stops). `before`: the upstream never sees it; `after`: the upstream handled it.
 */
export type ProxyFault =
  | {
      readonly kind: "respond";
      readonly stage?: FaultStage | undefined;
      readonly status: number;
      readonly body?: unknown;
      readonly headers?: Readonly<Record<string, string>> | undefined;
    }
  | { readonly kind: "reset"; readonly stage: FaultStage }
  | { readonly kind: "hang"; readonly stage: FaultStage };

/** Which requests a rule applies to. */
export interface RequestMatch {
  /** HTTP method (`POST`); any when absent. */
  readonly method?: string | undefined;
  /** The URL path: equal to a string, matched by a RegExp, or accepted by a function. */
  readonly path: string | RegExp | ((path: string) => boolean);
}

/** One request as the proxy saw it. */
export interface ProxiedRequest {
  readonly seq: number;
  readonly method: string;
  readonly path: string;
  /** The fault applied, if any. */
  readonly fault?: ProxyFault | undefined;
  /** Whether the request reached the upstream. */
  readonly forwarded: boolean;
  /** The status the upstream answered (forwarded requests that got an answer). */
  readonly upstreamStatus?: number | undefined;
}

interface Rule {
  readonly match: RequestMatch;
  readonly fault: ProxyFault;
  remaining: number;
}

/**
 * A small HTTP proxy for tests, put between a client and a local fake (the Telegram Bot API
 * fake, a Discord REST fake…) to inject network faults at exact points: answers without
 * forwarding, resets and hangs before or after the upstream processed a request, any status
 * (a 429 with a long `retry_after`, a 502 after the fact). Requests without a matching rule
 * pass through untouched, streamed both ways (long polls stay open).
 *
 * ```ts
 * const proxy = new FaultProxy(fake.apiRoot);
 * const { url } = await proxy.start();           // point the client at `url`
 * proxy.add({ method: "POST", path: /\/sendMessage$/ }, { kind: "reset", stage: "after" });
 * ```
 *
 * Rules match in the order added and apply `times` times (default 1; `Infinity` for always).
 * `stop()` ends hung connections and closes the port.
 */
export class FaultProxy {
  /** Every request, in arrival order. */
  readonly requests: ProxiedRequest[] = [];
  private readonly rules: Rule[] = [];
  private readonly upstream: URL;
  private server: Server | undefined;
  private readonly listeners = new Set<(request: ProxiedRequest) => void>();

  constructor(upstream: string) {
    this.upstream = new URL(upstream);
    if (this.upstream.protocol !== "http:") {
      throw new Error(`FaultProxy forwards to http:// upstreams only, got ${upstream}`);
    }
  }

  /** Listens on an ephemeral 127.0.0.1 port; `url` has no trailing slash. */
  async start(): Promise<{ url: string }> {
    const server = createServer((req, res) => this.handle(req, res));
    server.keepAliveTimeout = 1000;
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    this.server = server;
    return { url: this.url };
  }

  get url(): string {
    if (this.server === undefined) throw new Error("FaultProxy is not started; call start()");
    const { port } = this.server.address() as AddressInfo;
    return `http://127.0.0.1:${port}`;
  }

  /** Applies `fault` to the next `times` requests that match. */
  add(match: RequestMatch, fault: ProxyFault, times = 1): void {
    this.rules.push({ match, fault, remaining: times });
  }

  /** Drops every rule not used up yet. */
  clear(): void {
    this.rules.length = 0;
  }

  /** Resolves with the first request (seen or to come) that `predicate` accepts. */
  waitFor(
    predicate: (request: ProxiedRequest) => boolean,
    timeoutMs = 5000,
  ): Promise<ProxiedRequest> {
    const seen = this.requests.find(predicate);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const listener = (request: ProxiedRequest): void => {
        if (!predicate(request)) return;
        this.listeners.delete(listener);
        clearTimeout(timer);
        resolve(request);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(listener);
        reject(new Error(`FaultProxy.waitFor: no matching request within ${timeoutMs} ms`));
      }, timeoutMs);
      this.listeners.add(listener);
    });
  }

  /** Ends every open connection (hung ones included) and closes the port. */
  async stop(): Promise<void> {
    const server = this.server;
    if (server === undefined) return;
    this.server = undefined;
    const closed = once(server, "close");
    server.close();
    server.closeAllConnections();
    await closed;
  }

  private take(method: string, path: string): ProxyFault | undefined {
    const rule = this.rules.find((r) => r.remaining > 0 && matches(r.match, method, path));
    if (rule === undefined) return undefined;
    rule.remaining--;
    return rule.fault;
  }

  private note(request: Omit<ProxiedRequest, "seq">): void {
    const noted: ProxiedRequest = { seq: this.requests.length + 1, ...request };
    this.requests.push(noted);
    for (const listener of this.listeners) listener(noted);
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const method = req.method ?? "GET";
    const path = new URL(req.url ?? "/", "http://x").pathname;
    const fault = this.take(method, path);
    const stage = fault === undefined ? undefined : (fault.stage ?? "before");
    if (fault !== undefined && stage === "before") {
      this.note({ method, path, fault, forwarded: false });
      if (fault.kind === "reset") req.socket.destroy();
      else if (fault.kind === "respond") req.resume().on("end", () => answer(res, fault));
      else req.resume(); // hang: read the body, never answer
      return;
    }
    const upstream = httpRequest(
      {
        host: this.upstream.hostname,
        port: this.upstream.port,
        method,
        path: req.url,
        headers: forwardHeaders(req.headers, this.upstream.host),
        agent: false,
      },
      (upstreamRes) => {
        const status = upstreamRes.statusCode ?? 0;
        if (fault === undefined) {
          this.note({ method, path, forwarded: true, upstreamStatus: status });
          res.writeHead(status, upstreamRes.headers);
          upstreamRes.pipe(res);
          return;
        }
        // The upstream's whole answer is read (it handled the request), then the fault.
        upstreamRes.resume().on("end", () => {
          this.note({ method, path, fault, forwarded: true, upstreamStatus: status });
          if (fault.kind === "reset") req.socket.destroy();
          else if (fault.kind === "respond") answer(res, fault);
        });
      },
    );
    upstream.on("error", () => {
      if (!res.headersSent) res.writeHead(502).end();
      else res.destroy();
    });
    // A client that gives up (an aborted long poll) ends the upstream request too.
    res.on("close", () => {
      if (!res.writableFinished) upstream.destroy();
    });
    req.pipe(upstream);
  }
}

function matches(match: RequestMatch, method: string, path: string): boolean {
  if (match.method !== undefined && match.method.toUpperCase() !== method.toUpperCase()) {
    return false;
  }
  const { path: want } = match;
  if (typeof want === "string") return want === path;
  if (want instanceof RegExp) return want.test(path);
  return want(path);
}

function forwardHeaders(headers: IncomingHttpHeaders, host: string): IncomingHttpHeaders {
  const { connection: _connection, "keep-alive": _keepAlive, ...rest } = headers;
  return { ...rest, host };
}

function answer(res: ServerResponse, fault: Extract<ProxyFault, { kind: "respond" }>): void {
  if (res.writableEnded || res.destroyed) return;
  const raw = typeof fault.body === "string";
  const body =
    fault.body === undefined ? "" : raw ? String(fault.body) : JSON.stringify(fault.body);
  res.writeHead(fault.status, {
    "content-type": raw ? "text/plain" : "application/json",
    ...fault.headers,
  });
  res.end(body);
}
