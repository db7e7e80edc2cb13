import type { PostgresDatabase } from "../postgres/database.js";

/**
 * Who this gateway is in its cluster (docs/cluster.md): the cluster's id (made once in the
 * database) and this replica's. Only on a PostgreSQL store: on SQLite there is one replica
 * and no cluster.
 */
export interface ClusterIdentity {
  readonly clusterId: string;
  readonly replicaId: string;
  readonly database: PostgresDatabase;
}
