import type { ChannelHealth } from "../channels/types.js";
import { type HealthReport, overallStatus, type StoreHealth } from "../health/server.js";
import { clusterHealth } from "./cluster-health.js";
import type { EngineCheck, GatewayCore, StoreCheck } from "./core.js";
import { GatewayDefaults } from "./options.js";
import { sharedProbe } from "./shared-probe.js";

/** What the health endpoint reports (also used by `/status`). */
export async function healthReport(gateway: GatewayCore): Promise<HealthReport> {
  const channels: ChannelHealth[] = gateway.channels.map((c) => c.health());
  const [engine, store, cluster] = await Promise.all([
    engineReachable(gateway),
    storeHealth(gateway),
    clusterHealth(gateway),
  ]);
  const queue = gateway.services.queue;
  const damage = gateway.journal.damage;
  const journal: HealthReport["journal"] =
    damage === undefined
      ? { writable: gateway.journalProblem === undefined, detail: gateway.journalProblem }
      : { writable: false, damaged: true, detail: damage.message };
  return {
    status: overallStatus(channels, journal, engine.reachable, store?.reachable ?? true),
    channels,
    journal,
    engine,
    ...(store === undefined ? {} : { store }),
    ...(cluster === undefined ? {} : { cluster }),
    queue: { running: queue.active, queued: queue.pending },
    outbox: { scheduled: gateway.outbox.scheduled },
  };
}

/**
 * Whether the engine answers a ping. One ping at a time: callers that come while one is under
 * way (a burst of probes, `/status`, the web console) share its answer, which is reused for
 * `GatewayDefaults.engineCheckTtlMs`.
 */
export function engineReachable(gateway: GatewayCore): Promise<EngineCheck> {
  return sharedProbe(gateway.engineProbe, gateway.clock, GatewayDefaults.engineCheckTtlMs, () =>
    gateway.engine.ping().then(
      (): EngineCheck => ({ reachable: true }),
      (error: unknown): EngineCheck => ({
        reachable: false,
        detail: error instanceof Error ? error.message : String(error),
      }),
    ),
  );
}

/**
 * Whether the PostgreSQL store answers a `SELECT 1` (bounded by the pool's connect and query
 * timeouts), one probe at a time as {@link engineReachable}, reused for
 * `GatewayDefaults.storeCheckTtlMs`. `undefined` on the SQLite store, whose files have no
 * server to lose.
 */
export async function storeHealth(gateway: GatewayCore): Promise<StoreHealth | undefined> {
  const database = gateway.stores.database;
  if (database === undefined) return undefined;
  const slot = gateway.storeProbe;
  const check = await sharedProbe(slot, gateway.clock, GatewayDefaults.storeCheckTtlMs, () =>
    database.ping().then(
      (roundTripMs): StoreCheck => ({ reachable: true, roundTripMs }),
      (error: unknown): StoreCheck => ({
        reachable: false,
        detail: error instanceof Error ? error.message : String(error),
        downSinceMs:
          slot.last?.value.reachable === false
            ? slot.last.value.downSinceMs
            : gateway.clock.wallMs(),
      }),
    ),
  );
  return toStoreHealth(database.where, check);
}

function toStoreHealth(where: string, check: StoreCheck): StoreHealth {
  return {
    kind: "postgres",
    where,
    reachable: check.reachable,
    ...(check.roundTripMs === undefined
      ? {}
      : { roundTripMs: Math.round(check.roundTripMs * 10) / 10 }),
    ...(check.detail === undefined ? {} : { detail: check.detail }),
    ...(check.downSinceMs === undefined ? {} : { downSinceMs: check.downSinceMs }),
  };
}
