import type { ClusterIdentity } from "../cluster/identity.js";
import { listReplicas } from "../cluster/replica-registry.js";
import type { ClusterHealth } from "../health/server.js";
import type { GatewayCore } from "./core.js";
import { sharedProbe } from "./shared-probe.js";

/**
 * The cluster's replicas as the database lists them (health endpoint, `/status`, web console);
 * `undefined` on SQLite. A database that does not answer gives the cluster without its list.
 * Callers that come while a list is under way share it.
 */
export async function clusterHealth(gateway: GatewayCore): Promise<ClusterHealth | undefined> {
  const cluster = gateway.cluster;
  if (cluster === undefined) return undefined;
  // One list at a time: requests that come while one is under way (a burst of health probes,
  // `/status`, the web console) share it; the next one after it asks again (ages move).
  return sharedProbe(gateway.clusterProbe, gateway.clock, 0, () => listed(cluster));
}

async function listed(cluster: ClusterIdentity): Promise<ClusterHealth> {
  const base = { id: cluster.clusterId, replica: cluster.replicaId };
  try {
    const replicas = await listReplicas(cluster.database);
    return {
      ...base,
      replicas: replicas.map((r) => ({
        id: r.id,
        host: r.host,
        version: r.version,
        sessionsHeld: r.sessionsHeld,
        heartbeatMs: r.heartbeatMs,
        heartbeatAgeMs: r.heartbeatAgeMs,
        state: r.state,
        alive: r.alive,
      })),
    };
  } catch (error) {
    return { ...base, detail: error instanceof Error ? error.message : String(error) };
  }
}
