import Database from "better-sqlite3";
import type { PostgresDatabase, Queryable } from "../postgres/database.js";
import { StateSchemaError } from "./errors.js";
import { MIGRATIONS, schemaVersion } from "./schema.js";

/**
 * Moving one profile's state from its SQLite file into the PostgreSQL store (`mediagate store
 * migrate`, docs/store.md). The profile's rows in PostgreSQL become exactly the file's, in one
 * transaction: a second run writes the same rows again (message ids are PostgreSQL's own, taken
 * in the file's order, and summaries point at the moved messages).
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
}

type Row = Record<string, unknown>;

/** Everything one SQLite state file holds, as rows (read in one transaction). */
export interface SqliteStateRows {
  readonly sessions: Row[];
  readonly messages: Row[];
  readonly summaries: Row[];
  readonly approvals: Row[];
  readonly pairingCodes: Row[];
  readonly pairedUsers: Row[];
  readonly pairingGuard: Row[];
  readonly usage: Row[];
  readonly sessionModels: Row[];
  /** The newest time any row of the file was written (ms; 0 for an empty file). */
  readonly newestMs: number;
}

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
      const all = (sql: string) => db.prepare<[], Row>(sql).all();
      const newest = db
        .prepare<[], { t: number | null }>(
          `SELECT max(t) AS t FROM (
             SELECT max(updated_at) AS t FROM sessions UNION ALL
             SELECT max(created_at) FROM messages UNION ALL
             SELECT max(at) FROM usage UNION ALL
             SELECT max(coalesce(decided_at, created_at)) FROM approvals)`,
        )
        .get()?.t;
      return {
        sessions: all("SELECT * FROM sessions ORDER BY session_key"),
        messages: all("SELECT * FROM messages ORDER BY id"),
        summaries: all("SELECT * FROM summaries"),
        approvals: all("SELECT * FROM approvals ORDER BY rowid"),
        pairingCodes: all("SELECT * FROM pairing_codes"),
        pairedUsers: all("SELECT * FROM paired_users"),
        pairingGuard: all("SELECT * FROM pairing_guard"),
        usage: all("SELECT * FROM usage ORDER BY id"),
        sessionModels: all("SELECT * FROM session_models"),
        newestMs: newest ?? 0,
      };
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
    `SELECT max(t) AS t FROM (
       SELECT max(updated_at) AS t FROM state_sessions WHERE profile = $1 UNION ALL
       SELECT max(created_at) FROM state_messages WHERE profile = $1 UNION ALL
       SELECT max(at) FROM state_usage WHERE profile = $1 UNION ALL
       SELECT max(coalesce(decided_at, created_at)) FROM state_approvals WHERE profile = $1) times`,
    [profile],
  );
  return Number(result.rows[0]?.t ?? 0);
}

const ProfileTables = [
  "state_sessions",
  "state_messages",
  "state_summaries",
  "state_approvals",
  "state_pairing_codes",
  "state_paired_users",
  "state_pairing_guard",
  "state_usage",
  "state_session_models",
];

/** Rows per INSERT: well under PostgreSQL's 65,535 parameters for the widest table (12). */
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
  return database.transaction(`move state of ${profile}`, async (tx) => {
    for (const table of ProfileTables) {
      await tx.query(`DELETE FROM ${table} WHERE profile = $1`, [profile]);
    }
    await insertRows(
      tx,
      "state_sessions",
      ["profile", "session_key", "session_id", "created_at", "updated_at"],
      rows.sessions.map((r) => [profile, r.session_key, r.session_id, r.created_at, r.updated_at]),
    );
    const ids = new Map<number, number>();
    if (rows.messages.length > 0) {
      const taken = await tx.query<{ id: string }>(
        "SELECT nextval(pg_get_serial_sequence('state_messages', 'id')) AS id FROM generate_series(1, $1)",
        [rows.messages.length],
      );
      const fresh = taken.rows.map((r) => Number(r.id)).sort((a, b) => a - b);
      rows.messages.forEach((r, index) => {
        ids.set(Number(r.id), fresh[index]!);
      });
      await insertRows(
        tx,
        "state_messages",
        ["id", "profile", "session_id", "role", "body", "created_at"],
        rows.messages.map((r) => [
          ids.get(Number(r.id)),
          profile,
          r.session_id,
          r.role,
          r.body,
          r.created_at,
        ]),
        "OVERRIDING SYSTEM VALUE ",
      );
    }
    const summaries = rows.summaries.filter((r) => ids.has(Number(r.through_id)));
    await insertRows(
      tx,
      "state_summaries",
      ["profile", "session_id", "content", "through_id", "created_at"],
      summaries.map((r) => [
        profile,
        r.session_id,
        r.content,
        ids.get(Number(r.through_id)),
        r.created_at,
      ]),
    );
    await insertRows(
      tx,
      "state_approvals",
      [
        "profile",
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
      ],
      rows.approvals.map((r) => [
        profile,
        r.id,
        r.session_id,
        r.chat,
        r.status,
        r.body,
        r.message_id,
        r.created_at,
        r.expires_at,
        r.decided_by,
        r.decided_by_name,
        r.decided_at,
      ]),
    );
    await insertRows(
      tx,
      "state_pairing_codes",
      ["profile", "code", "user_id", "user_name", "chat_id", "created_at", "expires_at"],
      rows.pairingCodes.map((r) => [
        profile,
        r.code,
        r.user,
        r.user_name,
        r.chat_id,
        r.created_at,
        r.expires_at,
      ]),
    );
    await insertRows(
      tx,
      "state_paired_users",
      ["profile", "user_id", "user_name", "chat_id", "approved_at", "approved_by"],
      rows.pairedUsers.map((r) => [
        profile,
        r.user,
        r.user_name,
        r.chat_id,
        r.approved_at,
        r.approved_by,
      ]),
    );
    await insertRows(
      tx,
      "state_pairing_guard",
      ["profile", "failed_attempts", "locked_until"],
      rows.pairingGuard.map((r) => [profile, r.failed_attempts, r.locked_until]),
    );
    await insertRows(
      tx,
      "state_usage",
      [
        "profile",
        "at",
        "day",
        "session_key",
        "session_id",
        "user_id",
        "model",
        "input_tokens",
        "output_tokens",
        "cached_tokens",
        "cost",
      ],
      rows.usage.map((r) => [
        profile,
        r.at,
        r.day,
        r.session_key,
        r.session_id,
        r.user,
        r.model,
        r.input_tokens,
        r.output_tokens,
        r.cached_tokens,
        r.cost,
      ]),
    );
    await insertRows(
      tx,
      "state_session_models",
      ["profile", "session_key", "model", "updated_at"],
      rows.sessionModels.map((r) => [profile, r.session_key, r.model, r.updated_at]),
    );
    return {
      sessions: rows.sessions.length,
      messages: rows.messages.length,
      summaries: summaries.length,
      approvals: rows.approvals.length,
      pairing: rows.pairingCodes.length + rows.pairedUsers.length,
      usage: rows.usage.length,
      sessionModels: rows.sessionModels.length,
    };
  });
}
