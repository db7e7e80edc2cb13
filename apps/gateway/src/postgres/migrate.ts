import type { PostgresDatabase } from "./database.js";
import { PostgresSchemaError } from "./errors.js";

/** One schema step of a component; `version` is the component's version after it ran. */
export interface PostgresMigration {
  readonly version: number;
  /** The statements of the step (several, separated by `;`, run as one batch). */
  readonly sql: string;
}

/** The version a component had and has now. */
export interface PostgresMigrationResult {
  readonly from: number;
  readonly to: number;
}

/**
 * The key of the advisory lock every migration of a mediagate database takes: two gateways
 * (or a gateway and `mediagate store migrate`) starting at once migrate one after the other,
 * and the second finds nothing left to do.
 */
const MigrationLockKey = 0x6d656469; // "medi"

/**
 * Brings `component` (`journal`, `state`, …) of the database to the latest of `migrations`,
 * in one transaction under a database-wide advisory lock: the whole of it or nothing, and
 * never twice. The versions are kept in `mediagate_schema`. A component newer than
 * `migrations` rejects with {@link PostgresSchemaError} and changes nothing.
 */
export async function migratePostgres(
  database: PostgresDatabase,
  component: string,
  migrations: readonly PostgresMigration[],
): Promise<PostgresMigrationResult> {
  const latest = latestVersion(migrations);
  return database.transaction(`migrate ${component}`, async (tx) => {
    await tx.query("SELECT pg_advisory_xact_lock($1)", [MigrationLockKey]);
    await tx.query(`
      CREATE TABLE IF NOT EXISTS mediagate_schema (
        component  text PRIMARY KEY,
        version    integer NOT NULL CHECK (version >= 0),
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    const found = await tx.query<{ version: number }>(
      "SELECT version FROM mediagate_schema WHERE component = $1",
      [component],
    );
    const from = found.rows[0]?.version ?? 0;
    if (from > latest) throw new PostgresSchemaError(database.where, component, from, latest);
    let to = from;
    for (const step of [...migrations].sort((a, b) => a.version - b.version)) {
      if (step.version <= to) continue;
      await tx.query(step.sql);
      to = step.version;
    }
    await tx.query(
      `INSERT INTO mediagate_schema (component, version) VALUES ($1, $2)
       ON CONFLICT (component) DO UPDATE SET version = excluded.version, updated_at = now()`,
      [component, to],
    );
    return { from, to };
  });
}

/** The version `migrations` bring a component to (0 when there are none). */
export function latestVersion(migrations: readonly PostgresMigration[]): number {
  return migrations.reduce((max, step) => Math.max(max, step.version), 0);
}

/** The version of `component` in the database (0: never migrated), without changing anything. */
export async function postgresSchemaVersion(
  database: PostgresDatabase,
  component: string,
): Promise<number> {
  const table = await database.query<{ present: boolean }>(
    "schema version",
    "SELECT to_regclass('mediagate_schema') IS NOT NULL AS present",
  );
  if (table.rows[0]?.present !== true) return 0;
  const found = await database.query<{ version: number }>(
    "schema version",
    "SELECT version FROM mediagate_schema WHERE component = $1",
    [component],
  );
  return found.rows[0]?.version ?? 0;
}
