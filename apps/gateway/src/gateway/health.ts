import type { ChannelHealth } from "../channels/types.js";
import { type HealthReport, overallStatus, type StoreHealth } from "../health/server.js";
import { clusterHealth } from "./cluster-health.js";
import type { GatewayCore, StoreCheck } from "./core.js";
import { GatewayDefaults } from "./options.js";

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

/** Whether the engine answers a ping, reused for a few seconds (probes may poll often). */
export async function engineReachable(
  gateway: GatewayCore,
): Promise<{ reachable: boolean; detail?: string | undefined }> {
  const cached = gateway.engineCheck;
  const nowMs = gateway.clock.monoMs();
  if (cached !== undefined && nowMs - cached.atMs < GatewayDefaults.engineCheckTtlMs)
    return { reachable: cached.reachable, detail: cached.detail };
  let check: { atMs: number; reachable: boolean; detail?: string | undefined };
  try {
    await gateway.engine.ping();
    check = { atMs: gateway.clock.monoMs(), reachable: true };
  } catch (error) {
    check = {
      atMs: gateway.clock.monoMs(),
      reachable: false,
      detail: error instanceof Error ? error.message : String(error),
    };
  }
  gateway.engineCheck = check;
  return { reachable: check.reachable, detail: check.detail };
}

/**
 * Whether the PostgreSQL store answers a `SELECT 1` (bounded by the pool's connect and query
 * timeouts), reused for `GatewayDefaults.storeCheckTtlMs`; callers at once share one probe.
 * `undefined` on the SQLite store, whose files have no server to lose.
 */
export async function storeHealth(gateway: GatewayCore): Promise<StoreHealth | undefined> {
  const database = gateway.stores.database;
  if (database === undefined) return undefined;
  const cached = gateway.storeCheck;
  const nowMs = gateway.clock.monoMs();
  if (cached !== undefined && nowMs - cached.atMs < GatewayDefaults.storeCheckTtlMs)
    return toStoreHealth(database.where, cached);
  gateway.storeProbe ??= database
    .ping()
    .then(
      (roundTripMs) => ({ atMs: gateway.clock.monoMs(), reachable: true, roundTripMs }),
      (error: unknown) => ({
        atMs: gateway.clock.monoMs(),
        reachable: false,
        detail: error instanceof Error ? error.message : String(error),
        downSinceMs:
          gateway.storeCheck?.reachable === false
            ? gateway.storeCheck.downSinceMs
            : gateway.clock.wallMs(),
      }),
    )
    .then((check) => {
      gateway.storeCheck = check;
      gateway.storeProbe = undefined;
      return check;
    });
  return toStoreHealth(database.where, await gateway.storeProbe);
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
