import { listReplicas } from "../cluster/replica-registry.js";
import type { ClusterHealth } from "../health/server.js";
import type { GatewayCore } from "./core.js";

/**
 * The cluster's replicas as the database lists them (health endpoint, `/status`, web console);
 * `undefined` on SQLite. A database that does not answer gives the cluster without its list.
 */
export async function clusterHealth(gateway: GatewayCore): Promise<ClusterHealth | undefined> {
  const cluster = gateway.cluster;
  if (cluster === undefined) return undefined;
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
