import { createServer, type Server } from "node:http";
import { type AddressInfo, isIP } from "node:net";
import { formatListenAddress, isLoopbackHost, parseListenAddress } from "@mediagate/io";
import type { ChannelHealth } from "../channels/types.js";
import type { Redactor } from "../redact.js";

/** What the health endpoint reports (docs/durability.md). Token-free. */
export interface HealthReport {
  /**
   * `ok`: every channel up and the journal writable; `degraded`: a channel retrying, the
   * journal failing to write or the PostgreSQL store not answering (messages are not lost but
   * wait); `failed`: a channel gave up, or
   * the journal is damaged (nothing heals it but moving it aside: docs/operations.md).
   */
  readonly status: "ok" | "degraded" | "failed";
  readonly channels: readonly ChannelHealth[];
  /** `damaged` is there (true) only when the journal file is damaged. */
  readonly journal: {
    readonly writable: boolean;
    readonly damaged?: true;
    readonly detail?: string | undefined;
  };
  readonly engine: { readonly reachable: boolean; readonly detail?: string | undefined };
  /** The PostgreSQL store (docs/store.md); absent with the SQLite files. */
  readonly store?: StoreHealth | undefined;
  /** The replicas sharing the PostgreSQL store (docs/cluster.md); absent with the SQLite files. */
  readonly cluster?: ClusterHealth | undefined;
  readonly queue: { readonly running: number; readonly queued: number };
  readonly outbox: { readonly scheduled: number };
}

/**
 * Whether the PostgreSQL store answers (`SELECT 1`), named as `host:port/database` (never its
 * credentials). While it does not, nothing new is confirmed to the platforms: messages wait on
 * Telegram's and Discord's side and come once it is back (docs/store.md).
 */
export interface StoreHealth {
  readonly kind: "postgres";
  readonly where: string;
  readonly reachable: boolean;
  /** The probe's round trip, when it answered. */
  readonly roundTripMs?: number | undefined;
  /** Why it did not answer. */
  readonly detail?: string | undefined;
  /** Since when (epoch ms) it has not answered, as far as this process saw. */
  readonly downSinceMs?: number | undefined;
}

/**
 * This replica's cluster and every replica registered in it (docs/cluster.md), as the
 * database lists them; `replicas` is absent (and `detail` says why) when it could not be read.
 */
export interface ClusterHealth {
  readonly id: string;
  /** This replica's id. */
  readonly replica: string;
  readonly replicas?: readonly ReplicaHealth[] | undefined;
  readonly detail?: string | undefined;
}

/** One replica's row as the health endpoint shows it. */
export interface ReplicaHealth {
  readonly id: string;
  readonly host: string;
  readonly version: string;
  readonly sessionsHeld: number;
  /** Epoch ms of its last heartbeat, and how long ago that was by the database's clock. */
  readonly heartbeatMs: number;
  readonly heartbeatAgeMs: number;
  readonly state: "running" | "stopping" | "stopped";
  readonly alive: boolean;
}

/** The overall status from its parts. */
export function overallStatus(
  channels: readonly ChannelHealth[],
  journal: HealthReport["journal"],
  engineReachable: boolean,
  storeReachable = true,
): HealthReport["status"] {
  if (channels.some((c) => c.state === "failed") || journal.damaged) return "failed";
  if (!journal.writable || !engineReachable || !storeReachable) return "degraded";
  if (channels.some((c) => c.state !== "up")) return "degraded";
  return "ok";
}

/** A running health endpoint. */
export interface HealthServer {
  /** `http://host:port` it answers on. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Whether a `Host` header is one the health endpoint answers: `localhost` or an IP address.
 * A web page whose own name an attacker made resolve to 127.0.0.1 (DNS rebinding) sends that
 * name, and must not read the report; probes and the CLI ask for an address.
 */
function answeredHost(header: string | undefined): boolean {
  if (header === undefined) return false;
  let name: string;
  try {
    name = new URL(`http://${header}`).hostname.replace(/^\[|\]$/g, "");
  } catch {
    return false;
  }
  return isLoopbackHost(name) || isIP(name) !== 0;
}

/**
 * Serves `GET /health` on a loopback `host:port`: the {@link HealthReport} as JSON, HTTP 200
 * when `ok` or `degraded`, 503 when `failed` (a probe restarts or alerts). `HEAD` answers the
 * same status without the body; other methods are 405. Any other path is 404;
 * a `Host` that is neither `localhost` nor an IP address is 421 (DNS rebinding).
 * A report that fails is 500 with its error's message. Every string of the answer (the report's
 * fields, the failure's message) goes through `redactor` first: a channel's or the store's error
 * can quote a token or a URL with credentials.
 * `listen` is read by @mediagate/io's `parseListenAddress` (`[::1]:9464` for IPv6), which throws
 * `ListenAddressError` for anything else.
 */
export async function startHealthServer(
  listen: string,
  report: () => Promise<HealthReport>,
  redactor: Redactor,
): Promise<HealthServer> {
  const { host, port } = parseListenAddress(listen);
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (!answeredHost(request.headers.host)) {
      response
        .writeHead(421, { "content-type": "text/plain" })
        .end("unknown host: the health endpoint answers only localhost and IP addresses\n");
      return;
    }
    if (path !== "/health" && path !== "/healthz") {
      response.writeHead(404, { "content-type": "text/plain" }).end("not found; try GET /health\n");
      return;
    }
    // HEAD is what load balancers and uptime checkers send: the same status, no body (node
    // leaves it out).
    if (request.method !== "GET" && request.method !== "HEAD") {
      response
        .writeHead(405, { "content-type": "text/plain", allow: "GET, HEAD" })
        .end("method not allowed; use GET or HEAD /health\n");
      return;
    }
    report().then(
      (body) => {
        response
          .writeHead(body.status === "failed" ? 503 : 200, { "content-type": "application/json" })
          .end(`${JSON.stringify(redactor.value(body))}\n`);
      },
      (error: unknown) => {
        response
          .writeHead(500, { "content-type": "text/plain" })
          .end(
            redactor.text(
              `health report failed: ${error instanceof Error ? error.message : String(error)}\n`,
            ),
          );
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${formatListenAddress({ host: address.address, port: address.port })}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
