import type { PostgresDatabase } from "../postgres/database.js";
import { migratePostgres, type PostgresMigration } from "../postgres/migrate.js";

/** The component name of the cluster's tables in `mediagate_schema`. */
export const ClusterComponent = "cluster";

/**
 * The cluster's tables (docs/cluster.md): the cluster's id (one row, made with the table: a
 * cluster is a database), the replicas' registry, and the leader leases.
 */
export const ClusterMigrations: readonly PostgresMigration[] = [
  {
    version: 1,
    sql: `
      CREATE TABLE mediagate_cluster (
        singleton  boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        id         text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now()
      );
      INSERT INTO mediagate_cluster (id)
        VALUES (substr(md5(random()::text || clock_timestamp()::text), 1, 12));
      CREATE TABLE mediagate_replicas (
        id            text PRIMARY KEY,
        host          text NOT NULL,
        version       text NOT NULL,
        instance_id   text NOT NULL,
        started_at    timestamptz NOT NULL,
        heartbeat_at  timestamptz NOT NULL,
        sessions_held integer NOT NULL DEFAULT 0 CHECK (sessions_held >= 0),
        state         text NOT NULL CHECK (state IN ('running', 'stopping', 'stopped'))
      );
      CREATE TABLE mediagate_leases (
        name            text PRIMARY KEY,
        replica_id      text NOT NULL,
        instance_id     text NOT NULL,
        expires_at      timestamptz NOT NULL,
        term            bigint NOT NULL
      );`,
  },
];

/** Brings the cluster's tables to {@link ClusterMigrations}' latest version; returns the cluster's id. */
export async function migrateCluster(database: PostgresDatabase): Promise<string> {
  await migratePostgres(database, ClusterComponent, ClusterMigrations);
  const found = await database.query<{ id: string }>(
    "cluster id",
    "SELECT id FROM mediagate_cluster",
  );
  const id = found.rows[0]?.id;
  if (id === undefined) throw new Error("mediagate_cluster has no row: the cluster's id is gone");
  return id;
}
