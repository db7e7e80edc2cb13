import Database from "better-sqlite3";
import type { PostgresDatabase, Queryable } from "../postgres/database.js";
import { migratePostgres } from "../postgres/migrate.js";
import { StateSchemaError } from "../state/errors.js";
import { migrate } from "../state/schema.js";
import { ReleasedOwner } from "./journal-records.js";
import { JOURNAL_MIGRATIONS } from "./journal-schema.js";
import { JournalComponent, POSTGRES_JOURNAL_MIGRATIONS } from "./postgres-journal-schema.js";
import { goneOwners } from "./postgres-owner.js";

/**
 * Moving a home's SQLite journal (`journal.db`) into the PostgreSQL journal (`mediagate store
 * migrate`, docs/store.md). What moves:
 * - every entry, `done` ones included with their outcome: their receipts are what tells a
 *   platform's redelivery (a Telegram update offered again, a Discord catch-up) from a new
 *   message, and a pending reply names the entry it closed; the PostgreSQL gateway prunes them
 *   after `Defaults.gateway.journalRetentionMs` as the SQLite one would have;
 * - every receipt, the Discord cursors;
 * - the pending replies with their media plans and recorded steps (delivered and given-up
 *   ones are history, which the file keeps).
 * Unfinished entries, status messages still showing and pending replies are handed to
 * {@link ReleasedOwner}, so the next gateway start takes them over. Rows are keyed on the
 * entry's key, the receipt ids and the reply ids: what PostgreSQL already holds under one of
 * them is left as it is (a second run, or the gateway ran on PostgreSQL since), so running it
 * twice gives the same rows.
 */

/** How many rows of a journal file were written, and how many PostgreSQL held already. */
export interface JournalMoveCounts {
  /** Entries not `done` (received or started) written. */
  readonly unfinished: number;
  /** Entries `done` written (kept for their receipts). */
  readonly done: number;
  readonly receipts: number;
  readonly cursors: number;
  /** Pending replies written, and the steps recorded of them. */
  readonly replies: number;
  readonly steps: number;
  /** Entries and replies of the file PostgreSQL already held, left as they were. */
  readonly alreadyThere: number;
}

/** The journal file's rows, as SQLite holds them. */
export interface SqliteJournalRows {
  readonly entries: readonly EntryFileRow[];
  readonly receipts: readonly { key: string; entry_id: number; whole: number }[];
  readonly cursors: readonly CursorFileRow[];
  readonly replies: readonly ReplyFileRow[];
  readonly steps: readonly StepFileRow[];
}

interface EntryFileRow {
  id: number;
  key: string;
  profile: string;
  platform: string;
  state: string;
  outcome: string | null;
  message: string;
  received_at: number;
  started_at: number | null;
  finished_at: number | null;
  status: string | null;
  previews: string | null;
}

interface CursorFileRow {
  profile: string;
  channel_id: string;
  last_message_id: string;
  updated_at: number;
}

interface ReplyFileRow {
  id: string;
  entry_id: number | null;
  profile: string;
  platform: string;
  session_key: string;
  slot: string;
  target: string;
  text: string;
  attempts: number;
  created_at: number;
  not_before: number;
  last_error: string | null;
  plan: string | null;
  plain: number;
}

interface StepFileRow {
  reply_id: string;
  key: string;
  result: string;
  recorded_at: number;
}

/**
 * Brings the journal file at `path` to this build's schema (the gateway's own upgrade at start)
 * and reads the rows to move. Throws when the file is newer than this build. Its rows are
 * never changed.
 */
export function readSqliteJournal(path: string): SqliteJournalRows {
  const db = new Database(path, { fileMustExist: true });
  try {
    try {
      migrate(db, JOURNAL_MIGRATIONS);
    } catch (error) {
      if (!(error instanceof StateSchemaError)) throw error;
      throw new Error(
        `${path}: journal schema version ${error.found} is newer than this mediagate supports (${error.supported}); run the migration with the mediagate that wrote it`,
      );
    }
    return db.transaction(() => ({
      entries: db
        .prepare<[], EntryFileRow>(
          `SELECT id, key, profile, platform, state, outcome, message, received_at, started_at,
                  finished_at, status, previews FROM entries ORDER BY id`,
        )
        .all(),
      receipts: db
        .prepare<[], { key: string; entry_id: number; whole: number }>(
          "SELECT key, entry_id, whole FROM receipts ORDER BY key",
        )
        .all(),
      cursors: db.prepare<[], CursorFileRow>("SELECT * FROM cursors ORDER BY profile").all(),
      replies: db
        .prepare<[], ReplyFileRow>(
          `SELECT id, entry_id, profile, platform, session_key, slot, target, text, attempts,
                  created_at, not_before, last_error, plan, plain
             FROM replies WHERE state = 'pending' ORDER BY rowid`,
        )
        .all(),
      steps: db
        .prepare<[], StepFileRow>(
          `SELECT s.reply_id, s.key, s.result, s.recorded_at FROM reply_steps s
             JOIN replies r ON r.id = s.reply_id WHERE r.state = 'pending' ORDER BY s.rowid`,
        )
        .all(),
    }))();
  } finally {
    db.close();
  }
}

/**
 * The owners of unfinished entries, status messages or pending replies in the PostgreSQL
 * journal that are alive (they hold their owner lock), inside the caller's transaction `tx`;
 * none while the journal's tables do not exist yet.
 */
export async function liveJournalOwners(tx: Queryable): Promise<string[]> {
  const exists = await tx.query<{ t: string | null }>(
    "SELECT to_regclass('journal.entries')::text AS t",
  );
  if (exists.rows[0]?.t === null || exists.rows[0]?.t === undefined) return [];
  const owners = await tx.query<{ owner: string }>(
    `SELECT owner FROM journal.entries WHERE state <> 'done' OR status IS NOT NULL
     UNION SELECT owner FROM journal.replies WHERE state = 'pending'`,
  );
  const all = owners.rows.map((row) => row.owner);
  const gone = new Set(await goneOwners(tx, all, ""));
  return all.filter((owner) => !gone.has(owner)).sort();
}

/**
 * Writes `rows` into the PostgreSQL journal of `database` (migrating its schema), in one
 * transaction. When a live process owns unfinished work there, writes nothing and returns its
 * owners (`liveOwners`).
 */
export async function writePostgresJournal(
  database: PostgresDatabase,
  rows: SqliteJournalRows,
): Promise<JournalMoveCounts | { readonly liveOwners: readonly string[] }> {
  await migratePostgres(database, JournalComponent, POSTGRES_JOURNAL_MIGRATIONS);
  return database.transaction("journal move", async (tx) => {
    const live = await liveJournalOwners(tx);
    if (live.length > 0) return { liveOwners: live };
    let unfinished = 0;
    let done = 0;
    let alreadyThere = 0;
    const entryIds = new Map<number, string>();
    for (const batch of batches(rows.entries)) {
      const inserted = await tx.query<{ id: string; key: string }>(
        `${unnestInsert("journal.entries", EntryColumns)}
           ON CONFLICT (key) DO NOTHING RETURNING id, key`,
        columnsOf(batch, (entry) => [
          entry.key,
          entry.profile,
          entry.platform,
          entry.state,
          entry.outcome,
          ReleasedOwner,
          entry.message,
          entry.received_at,
          entry.started_at,
          entry.finished_at,
          entry.status,
          entry.previews,
        ]),
      );
      const idOf = new Map(inserted.rows.map((row) => [row.key, row.id]));
      const there = batch.filter((entry) => !idOf.has(entry.key)).map((entry) => entry.key);
      for (const entry of batch) {
        if (!idOf.has(entry.key)) continue;
        if (entry.state === "done") done++;
        else unfinished++;
      }
      if (there.length > 0) {
        alreadyThere += there.length;
        const found = await tx.query<{ id: string; key: string }>(
          "SELECT id, key FROM journal.entries WHERE key = ANY($1::text[])",
          [there],
        );
        for (const row of found.rows) idOf.set(row.key, row.id);
      }
      for (const entry of batch) {
        const id = idOf.get(entry.key);
        if (id !== undefined) entryIds.set(entry.id, id);
      }
    }
    let receipts = 0;
    const ownReceipts = rows.receipts.filter((receipt) => entryIds.has(receipt.entry_id));
    for (const batch of batches(ownReceipts)) {
      const written = await tx.query(
        `${unnestInsert("journal.receipts", ReceiptColumns)} ON CONFLICT (key) DO NOTHING`,
        columnsOf(batch, (receipt) => [
          receipt.key,
          entryIds.get(receipt.entry_id),
          receipt.whole === 1,
        ]),
      );
      receipts += written.rowCount ?? 0;
    }
    let cursors = 0;
    for (const batch of batches(rows.cursors)) {
      // The newer of the two stays, as `record` moves a cursor (postgres-journal.ts).
      const written = await tx.query(
        `${unnestInsert("journal.cursors AS c", CursorColumns)}
           ON CONFLICT (profile, channel_id) DO UPDATE
             SET last_message_id = excluded.last_message_id, updated_at = excluded.updated_at
             WHERE c.last_message_id ~ '^[0-9]{1,20}$' AND excluded.last_message_id ~ '^[0-9]{1,20}$'
               AND c.last_message_id::numeric < excluded.last_message_id::numeric`,
        columnsOf(batch, (cursor) => [
          cursor.profile,
          cursor.channel_id,
          cursor.last_message_id,
          cursor.updated_at,
        ]),
      );
      cursors += written.rowCount ?? 0;
    }
    let replies = 0;
    let steps = 0;
    const written = new Set<string>();
    for (const batch of batches(rows.replies)) {
      const inserted = await tx.query<{ id: string }>(
        `${unnestInsert("journal.replies", ReplyColumns)} ON CONFLICT (id) DO NOTHING RETURNING id`,
        columnsOf(batch, (reply) => [
          reply.id,
          reply.entry_id === null ? null : (entryIds.get(reply.entry_id) ?? null),
          reply.profile,
          reply.platform,
          reply.session_key,
          reply.slot,
          reply.target,
          // SQLite holds the text as it is; PostgreSQL as JSON (postgres-journal-schema.ts).
          JSON.stringify(reply.text),
          "pending",
          ReleasedOwner,
          reply.attempts,
          reply.created_at,
          reply.not_before,
          reply.last_error,
          reply.plan,
          reply.plain === 1,
        ]),
      );
      for (const row of inserted.rows) written.add(row.id);
      replies += inserted.rows.length;
      alreadyThere += batch.length - inserted.rows.length;
    }
    // Steps only of replies written now: one PostgreSQL held already has its own, newer ones.
    const ownSteps = rows.steps.filter((step) => written.has(step.reply_id));
    for (const batch of batches(ownSteps)) {
      await tx.query(
        unnestInsert("journal.reply_steps", StepColumns),
        columnsOf(batch, (step) => [step.reply_id, step.key, step.result, step.recorded_at]),
      );
      steps += batch.length;
    }
    return { unfinished, done, receipts, cursors, replies, steps, alreadyThere };
  });
}

/**
 * Rows per statement of the move, as one array per column: one round trip per batch. Row by
 * row, 10,000 finished messages with their receipts and 1,000 pending replies with a step took
 * 20.9 s on the test cluster, in batches 1.2 s (bench/store-migrate.bench.ts, load 14-15);
 * bounded so one statement's arrays stay a few MiB.
 */
const BatchRows = 5_000;

/** `rows` in slices of {@link BatchRows}. */
function* batches<T>(rows: readonly T[]): Generator<readonly T[]> {
  for (let start = 0; start < rows.length; start += BatchRows) {
    yield rows.slice(start, start + BatchRows);
  }
}

/** A column of an insert and its PostgreSQL type. */
type Column = readonly [name: string, type: "text" | "bigint" | "integer" | "boolean"];

const EntryColumns: readonly Column[] = [
  ["key", "text"],
  ["profile", "text"],
  ["platform", "text"],
  ["state", "text"],
  ["outcome", "text"],
  ["owner", "text"],
  ["message", "text"],
  ["received_at", "bigint"],
  ["started_at", "bigint"],
  ["finished_at", "bigint"],
  ["status", "text"],
  ["previews", "text"],
];
const ReceiptColumns: readonly Column[] = [
  ["key", "text"],
  ["entry_id", "bigint"],
  ["whole", "boolean"],
];
const CursorColumns: readonly Column[] = [
  ["profile", "text"],
  ["channel_id", "text"],
  ["last_message_id", "text"],
  ["updated_at", "bigint"],
];
const ReplyColumns: readonly Column[] = [
  ["id", "text"],
  ["entry_id", "bigint"],
  ["profile", "text"],
  ["platform", "text"],
  ["session_key", "text"],
  ["slot", "text"],
  ["target", "text"],
  ["text", "text"],
  ["state", "text"],
  ["owner", "text"],
  ["attempts", "integer"],
  ["created_at", "bigint"],
  ["not_before", "bigint"],
  ["last_error", "text"],
  ["plan", "text"],
  ["plain", "boolean"],
];
const StepColumns: readonly Column[] = [
  ["reply_id", "text"],
  ["key", "text"],
  ["result", "text"],
  ["recorded_at", "bigint"],
];

/** `INSERT INTO table (…) SELECT * FROM unnest($1::type[], …)`: the rows of one batch. */
function unnestInsert(table: string, columns: readonly Column[]): string {
  const names = columns.map(([name]) => name).join(", ");
  const arrays = columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(", ");
  return `INSERT INTO ${table} (${names}) SELECT * FROM unnest(${arrays})`;
}

/** The values of `batch` as one array per column, in the order `row` gives them. */
function columnsOf<T>(batch: readonly T[], row: (item: T) => readonly unknown[]): unknown[][] {
  const values = batch.map(row);
  const width = values[0]?.length ?? 0;
  return Array.from({ length: width }, (_, c) => values.map((r) => r[c]));
}
