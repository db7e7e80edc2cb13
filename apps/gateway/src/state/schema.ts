import type { Database } from "better-sqlite3";
import { upgradeLegacySessionKey } from "../session/key.js";
import { StateSchemaError } from "./errors.js";
import {
  addTaskReachColumns,
  createTaskTables,
  createUserTimezoneTable,
} from "./tasks-database.js";

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
  {
    // Session keys name their parts (`…:thread:<id>:user:<id>`). Keys of the old format that
    // read one way only are renamed, so those conversations go on; an old group key with one
    // extra part (a topic, or a member?) stays as it was and is never looked up again.
    version: 2,
    up(db) {
      const keys = db
        .prepare<[], { session_key: string }>("SELECT session_key FROM sessions")
        .all()
        .map((row) => row.session_key);
      const rename = db.prepare<[string, string]>(
        "UPDATE OR IGNORE sessions SET session_key = ? WHERE session_key = ?",
      );
      for (const key of keys) {
        const upgraded = upgradeLegacySessionKey(key);
        if (upgraded !== undefined && upgraded !== key) rename.run(upgraded, key);
      }
    },
  },
  {
    // Pairing (docs/security.md): codes waiting for an admin, the users approved with one,
    // and the attempt cap of chat approvals (one row). Users are `<platform>:<id>`.
    version: 3,
    up(db) {
      db.exec(`
        CREATE TABLE pairing_codes (
          code       TEXT PRIMARY KEY NOT NULL,
          user       TEXT NOT NULL UNIQUE,
          user_name  TEXT,
          chat_id    TEXT NOT NULL,
          created_at INTEGER NOT NULL,
          expires_at INTEGER NOT NULL
        ) STRICT;
        CREATE TABLE paired_users (
          user        TEXT PRIMARY KEY NOT NULL,
          user_name   TEXT,
          chat_id     TEXT NOT NULL,
          approved_at INTEGER NOT NULL,
          approved_by TEXT NOT NULL
        ) STRICT;
        CREATE TABLE pairing_guard (
          id              INTEGER PRIMARY KEY CHECK (id = 1),
          failed_attempts INTEGER NOT NULL CHECK (failed_attempts >= 0),
          locked_until    INTEGER NOT NULL
        ) STRICT;
      `);
    },
  },
  {
    // Approvals (docs/approvals.md): what the agent asked to do, who decided and how. The
    // record's fixed facts are one JSON body; what changes (status, decision) has columns.
    version: 4,
    up(db) {
      db.exec(`
        CREATE TABLE approvals (
          id              TEXT PRIMARY KEY NOT NULL,
          session_id      TEXT NOT NULL,
          chat            TEXT NOT NULL,
          status          TEXT NOT NULL,
          body            TEXT NOT NULL CHECK (json_valid(body)),
          message_id      TEXT,
          created_at      INTEGER NOT NULL,
          expires_at      INTEGER NOT NULL,
          decided_by      TEXT,
          decided_by_name TEXT,
          decided_at      INTEGER
        ) STRICT;
        CREATE INDEX approvals_by_status ON approvals (status, chat, created_at);
        CREATE INDEX approvals_by_session ON approvals (session_id, status);
      `);
    },
  },
  {
    // Compaction (docs/sessions.md, "Context budget and compaction"): one summary per session
    // of its messages up to `through_id`, which the model sees instead of them. The messages
    // themselves stay; a compaction is this one row's write, so a crash keeps the old summary
    // or the new one.
    version: 5,
    up(db) {
      db.exec(`
        CREATE TABLE summaries (
          session_id TEXT PRIMARY KEY NOT NULL,
          content    TEXT NOT NULL,
          through_id INTEGER NOT NULL CHECK (through_id > 0),
          created_at INTEGER NOT NULL
        ) STRICT;
      `);
    },
  },
  {
    // Models and usage (docs/models-and-usage.md): one row per model call, with its UTC day
    // for the daily totals and the budget, and the model `/model` picked per session key.
    // After approvals (4) and compaction's summaries (5).
    version: 6,
    up(db) {
      db.exec(`
        CREATE TABLE usage (
          id            INTEGER PRIMARY KEY AUTOINCREMENT,
          at            INTEGER NOT NULL,
          day           TEXT NOT NULL,
          session_key   TEXT NOT NULL,
          session_id    TEXT NOT NULL,
          user          TEXT,
          model         TEXT NOT NULL,
          input_tokens  INTEGER NOT NULL CHECK (input_tokens >= 0),
          output_tokens INTEGER NOT NULL CHECK (output_tokens >= 0),
          cached_tokens INTEGER NOT NULL CHECK (cached_tokens >= 0),
          cost          REAL NOT NULL CHECK (cost >= 0)
        ) STRICT;
        CREATE INDEX usage_by_day ON usage (day);
        CREATE INDEX usage_by_session ON usage (session_key, day);
        CREATE INDEX usage_by_user ON usage (user, day);
        CREATE TABLE session_models (
          session_key TEXT PRIMARY KEY NOT NULL,
          model       TEXT NOT NULL,
          updated_at  INTEGER NOT NULL
        ) STRICT;
      `);
    },
  },
  {
    // Scheduled tasks (docs/schedules.md): the tasks and one row per due time of each.
    version: 7,
    up: createTaskTables,
  },
  {
    // The time zone each user chose with /tz (docs/schedules.md).
    version: 8,
    up: createUserTimezoneTable,
  },
  {
    // Tasks whose chat is gone for the bot (docs/schedules.md, "Chats that are gone").
    version: 9,
    up: addTaskReachColumns,
  },
  {
    // When the attempt cap's row was last written, so that `mediagate store migrate` dates it
    // like every other table (docs/store.md). A row written before is dated 0: unknown.
    version: 10,
    up(db) {
      db.exec("ALTER TABLE pairing_guard ADD COLUMN updated_at INTEGER NOT NULL DEFAULT 0");
    },
  },
  {
    // The code that approved each user, so that approving it again says so instead of
    // counting as a wrong code (docs/security.md). Users approved before have none.
    version: 11,
    up(db) {
      db.exec(`
        ALTER TABLE paired_users ADD COLUMN code TEXT;
        CREATE INDEX paired_users_by_code ON paired_users (code);
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
