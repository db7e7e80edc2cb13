import Database from "better-sqlite3";
import type { PostgresDatabase, Queryable } from "../postgres/database.js";
import { StateSchemaError } from "./errors.js";
import { MIGRATIONS, schemaVersion } from "./schema.js";

/**
 * Moving one profile's state from its SQLite file into the PostgreSQL store (`mediagate store
 * migrate`, docs/store.md), table by table as {@link MovedStateTables} lists them. The profile's
 * rows in PostgreSQL become exactly the file's, in one transaction: a second run writes the
 * same rows again (message ids are PostgreSQL's own, taken in the file's order, and summaries
 * point at the moved messages).
 */

/** How many rows of each table one profile's move wrote. */
export interface StateMoveCounts {
  readonly sessions: number;
  readonly messages: number;
  readonly summaries: number;
  readonly approvals: number;
  readonly pairing: number;
  readonly usage: number;
  readonly sessionModels: number;
  readonly tasks: number;
  readonly taskRuns: number;
}

type Row = Record<string, unknown>;

/**
 * One SQLite state table and the PostgreSQL table its rows move to: `columns` pairs each
 * PostgreSQL column (besides `profile`) with the SQLite column it is written from, and `left`
 * names each SQLite column not moved, with why. Every table of the SQLite schema is listed,
 * every column of it moved or left (state-transfer.test.ts checks both against a fresh file),
 * so a schema step that adds one fails that test until the move covers it.
 */
export interface MovedStateTable {
  readonly sqlite: string;
  readonly postgres: string;
  /** The SQLite `ORDER BY` the rows are read (and so written) in. */
  readonly order: string;
  readonly columns: readonly (readonly [postgres: string, sqlite: string])[];
  readonly left?: Readonly<Record<string, string>>;
}

const same = (...names: string[]) => names.map((name) => [name, name] as const);

/** Every table of the SQLite state schema, as `mediagate store migrate` moves it. */
export const MovedStateTables: readonly MovedStateTable[] = [
  {
    sqlite: "sessions",
    postgres: "state_sessions",
    order: "session_key",
    columns: same("session_key", "session_id", "created_at", "updated_at"),
  },
  {
    // Ids are PostgreSQL's own, taken in the file's order; summaries point at them.
    sqlite: "messages",
    postgres: "state_messages",
    order: "id",
    columns: same("id", "session_id", "role", "body", "created_at"),
  },
  {
    sqlite: "summaries",
    postgres: "state_summaries",
    order: "session_id",
    columns: same("session_id", "content", "through_id", "created_at"),
  },
  {
    sqlite: "approvals",
    postgres: "state_approvals",
    order: "rowid",
    columns: same(
      "id",
      "session_id",
      "chat",
      "status",
      "body",
      "message_id",
      "created_at",
      "expires_at",
      "decided_by",
      "decided_by_name",
      "decided_at",
    ),
  },
  {
    sqlite: "pairing_codes",
    postgres: "state_pairing_codes",
    order: "code",
    columns: [
      ["code", "code"],
      ["user_id", "user"],
      ["user_name", "user_name"],
      ["chat_id", "chat_id"],
      ["created_at", "created_at"],
      ["expires_at", "expires_at"],
    ],
  },
  {
    sqlite: "paired_users",
    postgres: "state_paired_users",
    order: "user",
    columns: [
      ["user_id", "user"],
      ["user_name", "user_name"],
      ["chat_id", "chat_id"],
      ["approved_at", "approved_at"],
      ["approved_by", "approved_by"],
      ["code", "code"],
    ],
  },
  {
    sqlite: "pairing_guard",
    postgres: "state_pairing_guard",
    order: "id",
    columns: same("failed_attempts", "locked_until", "updated_at"),
    left: { id: "always 1: the one row of the file; PostgreSQL keys it by profile" },
  },
  {
    sqlite: "usage",
    postgres: "state_usage",
    order: "id",
    columns: [
      ["at", "at"],
      ["day", "day"],
      ["session_key", "session_key"],
      ["session_id", "session_id"],
      ["user_id", "user"],
      ["model", "model"],
      ["input_tokens", "input_tokens"],
      ["output_tokens", "output_tokens"],
      ["cached_tokens", "cached_tokens"],
      ["cost", "cost"],
    ],
    left: { id: "nothing points at a usage record: PostgreSQL numbers them itself" },
  },
  {
    sqlite: "session_models",
    postgres: "state_session_models",
    order: "session_key",
    columns: same("session_key", "model", "updated_at"),
  },
  {
    sqlite: "tasks",
    postgres: "state_tasks",
    order: "created_at, id",
    columns: same(
      "id",
      "owner",
      "owner_name",
      "name",
      "timing",
      "timezone",
      "text",
      "chat",
      "catch_up",
      "paused",
      "active",
      "next_due_at",
      "overlaps_in_a_row",
      "unreachable_in_a_row",
      "paused_reason",
      "created_at",
    ),
  },
  {
    sqlite: "task_runs",
    postgres: "state_task_runs",
    order: "task_id, due_at",
    columns: same("task_id", "due_at", "outcome", "at", "detail"),
  },
  {
    sqlite: "user_timezones",
    postgres: "state_user_timezones",
    order: "user",
    columns: [
      ["user_id", "user"],
      ["timezone", "timezone"],
      ["updated_at", "updated_at"],
    ],
  },
];

/** SQLite's 0/1 for PostgreSQL's `boolean` columns. */
const BooleanColumns = new Set(["state_tasks.paused", "state_tasks.active"]);

/** Everything one SQLite state file holds, as rows (read in one transaction). */
export interface SqliteStateRows {
  /** Each SQLite table's rows, by its name in {@link MovedStateTables}. */
  readonly tables: ReadonlyMap<string, readonly Row[]>;
  /** The newest time any row of the file was written (ms; 0 for an empty file). */
  readonly newestMs: number;
}

/**
 * When a row of each state table was written, by table (PostgreSQL's is `state_` and the
 * same name): the newest of them all dates a profile's state on either side. Every table
 * whose rows carry a time of writing is here, pairing and `/model` picks as much as
 * messages: a profile whose only change on PostgreSQL was an approved pairing or a model
 * pick is still newer than its file (`store migrate` would otherwise overwrite it), and so is
 * one whose only change was a wrong `/approve` (the attempt cap's row: a lock would be lifted).
 */
const WrittenAt: readonly (readonly [table: string, time: string])[] = [
  ["sessions", "updated_at"],
  ["messages", "created_at"],
  ["summaries", "created_at"],
  ["approvals", "coalesce(decided_at, created_at)"],
  ["pairing_codes", "created_at"],
  ["paired_users", "approved_at"],
  ["pairing_guard", "updated_at"],
  ["usage", "at"],
  ["session_models", "updated_at"],
  ["tasks", "created_at"],
  ["task_runs", "at"],
  ["user_timezones", "updated_at"],
];

const Latest = MIGRATIONS.reduce((max, m) => Math.max(max, m.version), 0);

/**
 * Reads every row of the state file at `path`, which must be at this build's schema (open it
 * with `SqliteStateStore` first to migrate an older one); a newer one throws
 * {@link StateSchemaError}. Read-only: the file is never changed.
 */
export function readSqliteState(path: string): SqliteStateRows {
  const db = new Database(path, { readonly: true, fileMustExist: true });
  try {
    const version = schemaVersion(db);
    if (version !== Latest) throw new StateSchemaError(version, Latest);
    return db.transaction(() => {
      const newest = db
        .prepare<[], { t: number | null }>(
          `SELECT max(t) AS t FROM (${WrittenAt.map(
            ([table, time]) => `SELECT max(${time}) AS t FROM ${table}`,
          ).join(" UNION ALL ")})`,
        )
        .get()?.t;
      const tables = new Map<string, Row[]>();
      for (const table of MovedStateTables) {
        tables.set(
          table.sqlite,
          db.prepare<[], Row>(`SELECT * FROM ${table.sqlite} ORDER BY ${table.order}`).all(),
        );
      }
      return { tables, newestMs: newest ?? 0 };
    })();
  } finally {
    db.close();
  }
}

/** The newest time `profile`'s rows in PostgreSQL were written (0 when it has none). */
export async function newestPostgresState(
  database: PostgresDatabase,
  profile: string,
): Promise<number> {
  const result = await database.query<{ t: string | null }>(
    "newest state",
    `SELECT max(t) AS t FROM (${WrittenAt.map(
      ([table, time]) => `SELECT max(${time}) AS t FROM state_${table} WHERE profile = $1`,
    ).join(" UNION ALL ")}) times`,
    [profile],
  );
  return Number(result.rows[0]?.t ?? 0);
}

/** Rows per INSERT: well under PostgreSQL's 65,535 parameters for the widest table (15). */
const BatchRows = 1_000;

async function insertRows(
  tx: Queryable,
  table: string,
  columns: readonly string[],
  rows: readonly unknown[][],
  prefix = "",
): Promise<void> {
  for (let start = 0; start < rows.length; start += BatchRows) {
    const batch = rows.slice(start, start + BatchRows);
    const values = batch.map(
      (_, r) => `(${columns.map((_, c) => `$${r * columns.length + c + 1}`).join(", ")})`,
    );
    await tx.query(
      `INSERT INTO ${table} (${columns.join(", ")}) ${prefix}VALUES ${values.join(", ")}`,
      batch.flat(),
    );
  }
}

/**
 * Replaces `profile`'s state in PostgreSQL (its tables migrated) with `rows`, in one
 * transaction: all of it or nothing.
 */
export async function writePostgresState(
  database: PostgresDatabase,
  profile: string,
  rows: SqliteStateRows,
): Promise<StateMoveCounts> {
  const rowsOf = (sqlite: string) => rows.tables.get(sqlite) ?? [];
  return database.transaction(`move state of ${profile}`, async (tx) => {
    for (const table of MovedStateTables) {
      await tx.query(`DELETE FROM ${table.postgres} WHERE profile = $1`, [profile]);
    }
    const ids = new Map<number, number>();
    const messages = rowsOf("messages");
    if (messages.length > 0) {
      const taken = await tx.query<{ id: string }>(
        "SELECT nextval(pg_get_serial_sequence('state_messages', 'id')) AS id FROM generate_series(1, $1)",
        [messages.length],
      );
      const fresh = taken.rows.map((r) => Number(r.id)).sort((a, b) => a - b);
      messages.forEach((r, index) => {
        ids.set(Number(r.id), fresh[index]!);
      });
    }
    const written = new Map<string, number>();
    for (const table of MovedStateTables) {
      let source = rowsOf(table.sqlite);
      // A summary of messages the file no longer has points nowhere: it is not moved.
      if (table.sqlite === "summaries")
        source = source.filter((r) => ids.has(Number(r.through_id)));
      const values = source.map((r) => [
        profile,
        ...table.columns.map(([postgres, sqlite]) => {
          const value = r[sqlite];
          if (
            (table.sqlite === "messages" && sqlite === "id") ||
            (table.sqlite === "summaries" && sqlite === "through_id")
          ) {
            return ids.get(Number(value));
          }
          return BooleanColumns.has(`${table.postgres}.${postgres}`) ? value === 1 : value;
        }),
      ]);
      await insertRows(
        tx,
        table.postgres,
        ["profile", ...table.columns.map(([postgres]) => postgres)],
        values,
        table.sqlite === "messages" ? "OVERRIDING SYSTEM VALUE " : "",
      );
      written.set(table.sqlite, values.length);
    }
    const count = (sqlite: string) => written.get(sqlite) ?? 0;
    return {
      sessions: count("sessions"),
      messages: count("messages"),
      summaries: count("summaries"),
      approvals: count("approvals"),
      pairing: count("pairing_codes") + count("paired_users"),
      usage: count("usage"),
      sessionModels: count("session_models"),
      tasks: count("tasks"),
      taskRuns: count("task_runs"),
    };
  });
}
