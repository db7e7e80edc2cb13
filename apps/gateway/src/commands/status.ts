import type { ChannelHealth } from "../channels/types.js";
import type { ClusterHealth, StoreHealth } from "../health/server.js";
import type { PipelineRuntime, PipelineServices } from "../pipeline/types.js";
import { sandboxProblemOf } from "../sandbox-access/sandbox-errors.js";
import { SlotRegistry } from "../sandbox-access/slot-registry.js";

/**
 * One channel's line of `/status`, e.g. `Channel telegram (work): up, last answer 3 s ago`: its
 * state, why it is not `up` (if so), and when the platform last answered (a poll, a heartbeat).
 */
export function describeChannel(health: ChannelHealth, nowMs = Date.now()): string {
  const last =
    health.lastOkMs === undefined
      ? ""
      : `, last answer ${Math.max(0, Math.round((nowMs - health.lastOkMs) / 1000))} s ago`;
  const detail = health.detail === undefined ? "" : ` (${health.detail})`;
  const mode = health.mode === undefined ? "" : ` by ${health.mode}`;
  const webhookError =
    health.webhookError === undefined
      ? ""
      : `; webhook last error ${Math.max(0, Math.round((nowMs - health.webhookError.atMs) / 1000))} s ago: ${health.webhookError.message}`;
  const standby =
    health.standby === true ? " (standby: another replica holds the bot's connection)" : "";
  return `Channel ${health.platform} (${health.profile})${mode}: ${health.state}${standby}${detail}${last}${webhookError}`;
}

/** `/status`: session key and id, slot, container id and state, turn running, queued count. */
export async function describeStatus(
  runtime: PipelineRuntime,
  services: PipelineServices,
  sessionKey: string,
  sessionId: string,
): Promise<string> {
  const slot = runtime.slotFor(sessionKey);
  const store = await services.store?.().catch(() => undefined);
  let container: string;
  try {
    const status = await runtime.sandbox.status(slot);
    container =
      status === undefined ? "none yet" : `${status.containerId.slice(0, 12)} (${status.state})`;
  } catch (error) {
    container =
      sandboxProblemOf(error)?.kind === "docker_unavailable"
        ? "unknown (Docker cannot be reached)"
        : "unknown (sandbox error)";
  }
  const shared = runtime.isSharedSlot(slot)
    ? ` (shared; ${services.slots.count(SlotRegistry.slotId(runtime.profile.name, slot), sessionKey)} session(s) seen)`
    : "";
  return [
    `Session: ${sessionKey}`,
    `Session id: ${sessionId}`,
    `Slot: ${slot}${shared}`,
    `Container: ${container}`,
    `Turn running: ${services.queue.isRunning(sessionKey) ? "yes" : "no"}`,
    `Queued messages: ${services.queue.queued(sessionKey)}`,
    ...services.channels().map(describeChannel),
    ...(store === undefined ? [] : [describeStore(store)]),
  ].join("\n");
}

/**
 * The store's line of `/status` (PostgreSQL only): `Store: PostgreSQL db:5432/mg: reachable,
 * round trip 1.2 ms`, or not reachable with the reason and since when.
 */
export function describeStore(store: StoreHealth, nowMs = Date.now()): string {
  const name = `Store: PostgreSQL ${store.where}`;
  if (store.reachable) {
    const trip = store.roundTripMs === undefined ? "" : `, round trip ${store.roundTripMs} ms`;
    return `${name}: reachable${trip}`;
  }
  const since =
    store.downSinceMs === undefined
      ? ""
      : ` for ${Math.max(0, Math.round((nowMs - store.downSinceMs) / 1000))} s`;
  return `${name}: NOT reachable${since} (${store.detail ?? "no answer"}); new messages wait until it is back`;
}

/**
 * The cluster's lines of an admin's `/status` (PostgreSQL only, docs/cluster.md): a summary,
 * then one line per replica: id, host, version, alive or dead, sessions held, last heartbeat.
 */
export function describeCluster(cluster: ClusterHealth): string[] {
  const replicas = cluster.replicas;
  if (replicas === undefined)
    return [
      `Cluster ${cluster.id} (this replica: ${cluster.replica}): replicas unknown (${cluster.detail ?? "no answer"})`,
    ];
  const alive = replicas.filter((r) => r.alive).length;
  return [
    `Cluster ${cluster.id}: ${alive} of ${replicas.length} replica(s) alive (this one: ${cluster.replica})`,
    ...replicas.map((r) => {
      const state = r.alive
        ? r.state === "stopping"
          ? "stopping"
          : "alive"
        : r.state === "stopped"
          ? "stopped"
          : "DEAD";
      const age = Math.round(r.heartbeatAgeMs / 1000);
      return `Replica ${r.id} (${r.host}, ${r.version}): ${state}, ${r.sessionsHeld} session(s), last heartbeat ${age} s ago`;
    }),
  ];
}
