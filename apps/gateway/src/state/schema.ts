import type { Database } from "better-sqlite3";
import { StateSchemaError } from "./errors.js";

/** One schema step; `version` is the `user_version` the database has after it ran. */
export interface Migration {
  readonly version: number;
  up(db: Database): void;
}

/**
 * Schema history of the state database, oldest first. Append new steps; never edit a
 * released one (databases in the field already ran it).
 */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    up(db) {
      db.exec(`
        CREATE TABLE sessions (
          session_key TEXT PRIMARY KEY NOT NULL,
          session_id  TEXT NOT NULL UNIQUE,
          created_at  INTEGER NOT NULL,
          updated_at  INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE messages (
          id         INTEGER PRIMARY KEY AUTOINCREMENT,
          session_id TEXT NOT NULL,
          role       TEXT NOT NULL CHECK (role IN ('system', 'user', 'assistant', 'tool')),
          body       TEXT NOT NULL CHECK (json_valid(body)),
          created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX messages_by_session ON messages (session_id, id);
      `);
    },
  },
];

/** Result of {@link migrate}: the version found and the version the database has now. */
export interface MigrationResult {
  readonly from: number;
  readonly to: number;
}

/** Reads `PRAGMA user_version`. */
export function schemaVersion(db: Database): number {
  const value: unknown = db.pragma("user_version", { simple: true });
  return typeof value === "number" ? value : 0;
}

/**
 * Brings the database to the latest schema. Each step runs in its own transaction together
 * with its `user_version` bump, so a failing step leaves the database at the previous
 * version. A database newer than `migrations` throws {@link StateSchemaError} untouched.
 */
export function migrate(
  db: Database,
  migrations: readonly Migration[] = MIGRATIONS,
): MigrationResult {
  const from = schemaVersion(db);
  const latest = migrations.reduce((max, m) => Math.max(max, m.version), 0);
  if (from > latest) throw new StateSchemaError(from, latest);
  for (const migration of migrations) {
    if (migration.version <= schemaVersion(db)) continue;
    db.transaction(() => {
      migration.up(db);
      db.pragma(`user_version = ${Math.trunc(migration.version)}`);
    })();
  }
  return { from, to: schemaVersion(db) };
}
