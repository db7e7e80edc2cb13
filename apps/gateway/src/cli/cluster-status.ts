import { MediagateError } from "@mediagate/io";
import { listReplicas, type ReplicaInfo } from "../cluster/replica-registry.js";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { Defaults } from "../defaults.js";
import { PostgresDatabase } from "../postgres/database.js";
import type { Redactor } from "../redact.js";

/** `mediagate status` could not read the replicas from the store's database. */
export class ClusterStatusError extends MediagateError {
  override readonly name = "ClusterStatusError";
  readonly code = "MG_CLI_STATUS_FAILED";
}

/** What `mediagate status` needs from the command line. */
export interface ClusterStatusOptions {
  readonly config?: string | undefined;
  readonly env: GatewayEnv;
  readonly redactor: Redactor;
}

/**
 * `mediagate status` (docs/cluster.md): the replicas of the config's PostgreSQL store, a header
 * row then one per replica (id, host, version, sessions held, last heartbeat, alive or dead).
 * On SQLite there is one replica and no cluster: it says so. Returns the exit code.
 * @throws ClusterStatusError when the database cannot be read.
 */
export async function clusterStatus(
  options: ClusterStatusOptions,
  print: (line: string) => void,
): Promise<number> {
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  if (config.store.kind === "sqlite") {
    print(
      "store: SQLite; one replica (this host), no cluster: replicas share a store: { kind: postgres } (docs/cluster.md)",
    );
    return 0;
  }
  const database = new PostgresDatabase({
    url: config.store.url,
    maxConnections: 1,
    applicationName: "mediagate status",
  });
  try {
    const present = await database.query<{ present: boolean }>(
      "cluster status",
      "SELECT to_regclass('mediagate_replicas') IS NOT NULL AS present",
    );
    if (present.rows[0]?.present !== true) {
      print(`cluster of PostgreSQL ${database.where}: no replica has started on it yet`);
      return 0;
    }
    const cluster = await database.query<{ id: string }>(
      "cluster status",
      "SELECT id FROM mediagate_cluster",
    );
    const replicas = await listReplicas(database, Defaults.cluster.deadAfterMs);
    const alive = replicas.filter((r) => r.alive).length;
    print(
      `cluster ${cluster.rows[0]?.id ?? "?"} on PostgreSQL ${database.where}: ${alive} of ${replicas.length} replica(s) alive`,
    );
    for (const line of replicaTable(replicas)) print(line);
    return 0;
  } catch (error) {
    throw new ClusterStatusError(
      `could not read the cluster of PostgreSQL ${database.where}: ${error instanceof Error ? error.message : String(error)}`,
      { cause: error },
    );
  } finally {
    await database.close();
  }
}

/** The replicas as aligned columns, a header first. */
export function replicaTable(replicas: readonly ReplicaInfo[]): string[] {
  const rows = [
    ["REPLICA", "HOST", "VERSION", "SESSIONS", "HEARTBEAT", "STATE"],
    ...replicas.map((r) => [
      r.id,
      r.host,
      r.version,
      String(r.sessionsHeld),
      `${Math.round(r.heartbeatAgeMs / 1000)} s ago`,
      r.alive
        ? r.state === "stopping"
          ? "stopping"
          : "alive"
        : r.state === "stopped"
          ? "stopped"
          : "dead",
    ]),
  ];
  const widths =
    rows[0]?.map((_, column) => Math.max(...rows.map((row) => row[column]?.length ?? 0))) ?? [];
  return rows.map((row) =>
    row
      .map((cell, column) => cell.padEnd(widths[column] ?? 0))
      .join("  ")
      .trimEnd(),
  );
}
