import { migrateCluster } from "../cluster/cluster-schema.js";
import type { ClusterIdentity } from "../cluster/identity.js";
import { resolveReplicaId } from "../cluster/replica-id.js";
import { ReplicaRegistry } from "../cluster/replica-registry.js";
import type { GatewayConfig } from "../config/types.js";
import type { GatewayCore } from "./core.js";
import type { StoreBackend } from "./stores.js";

/**
 * The cluster of a PostgreSQL store: brings the cluster's tables up to date and finds this
 * replica's id (`cluster.replicaId`, or the home's `replica-id` file). `undefined` on SQLite.
 */
export async function openCluster(
  config: GatewayConfig,
  stores: StoreBackend,
): Promise<ClusterIdentity | undefined> {
  const database = stores.database;
  if (database === undefined) return undefined;
  const clusterId = await migrateCluster(database);
  const replicaId = await resolveReplicaId(config.home, config.cluster?.replicaId);
  return { clusterId, replicaId, database };
}

/** Registers this replica and starts its heartbeat (nothing on SQLite). */
export async function joinCluster(gateway: GatewayCore, version: string): Promise<void> {
  const cluster = gateway.cluster;
  if (cluster === undefined) return;
  let failing = false;
  gateway.replica = await ReplicaRegistry.register({
    database: cluster.database,
    replicaId: cluster.replicaId,
    version,
    // The registry names a replica by the same instance id its leases and journal rows carry.
    ...(gateway.options.instanceId === undefined ? {} : { instanceId: gateway.options.instanceId }),
    ...(gateway.replicas === undefined
      ? {}
      : { sessionsHeld: () => gateway.replicas?.sessionsHeld() ?? 0 }),
    ...(gateway.options.heartbeatSchedule === undefined
      ? {}
      : { schedule: gateway.options.heartbeatSchedule }),
    onHeartbeatFailed: (error) => {
      if (failing) return;
      failing = true;
      gateway.logger.warn({ err: error }, "replica heartbeat could not be written; retrying");
    },
    onHeartbeatRecovered: () => {
      failing = false;
      gateway.logger.info("replica heartbeat written again");
    },
  });
  gateway.logger.info(
    { cluster: cluster.clusterId, replica: cluster.replicaId },
    "replica registered in the cluster",
  );
}

/** Marks this replica `stopping` at the start of a graceful stop; a failure is only logged. */
export async function leavingCluster(gateway: GatewayCore): Promise<void> {
  await gateway.replica?.stopping().catch((error: unknown) => {
    gateway.logger.warn({ err: error }, "could not mark the replica stopping");
  });
}

/** Stops the heartbeat and marks this replica `stopped`; a failure is only logged. */
export async function leaveCluster(gateway: GatewayCore): Promise<void> {
  await gateway.replica?.close().catch((error: unknown) => {
    gateway.logger.warn({ err: error }, "could not mark the replica stopped");
  });
}
