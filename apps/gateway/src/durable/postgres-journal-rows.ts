import { isPlanRecord } from "@mediagate/media/plan-record";
import type { InboundMessage, StepResult } from "../channels/types.js";
import type { Queryable } from "../postgres/database.js";
import { isChatTarget, isInboundMessage, parseJson, receiptKey } from "./journal-records.js";
import type { JournalEntry, JournalState, OutboxRecord, OutboxState } from "./types.js";

/** How the rows of the PostgreSQL journal (postgres-journal-schema.ts) read back into records. */

/** A bigint column as node-postgres reads it (text), or a number. */
export type Int8 = string | number;

export interface EntryRow {
  id: Int8;
  key: string;
  state: JournalState;
  owner: string;
  message: string;
  received_at: Int8;
  started_at: Int8 | null;
}

export interface ReplyRow {
  id: string;
  entry_id: Int8 | null;
  profile: string;
  platform: InboundMessage["platform"];
  session_key: string;
  slot: string;
  target: string;
  text: string;
  state: OutboxState;
  owner: string;
  attempts: number;
  created_at: Int8;
  not_before: Int8;
  last_error: string | null;
  plan: string | null;
  plain: boolean;
}

/**
 * The entry each of `receiptIds` was recorded with, `undefined` for one not recorded. When the
 * first is an entry's recorded before receipts were (a journal moved over from SQLite's
 * version 2), it stands for them all: that version recorded an album by its first update alone.
 */
export async function findReceipts(
  tx: Queryable,
  profile: string,
  platform: string,
  receiptIds: readonly string[],
): Promise<(number | undefined)[]> {
  const keys = receiptIds.map((id) => receiptKey(profile, platform, id));
  const rows = await tx.query<ReceiptRow>(
    "SELECT key, entry_id, whole FROM journal.receipts WHERE key = ANY($1::text[])",
    [keys],
  );
  return receiptEntries(keys, rows.rows);
}

/** A receipt as read back (`entry_id` a number in JSON, text as a column). */
export interface ReceiptRow {
  key: string;
  entry_id: Int8;
  whole: boolean;
}

/** The entry of each of `keys` among `rows`, with the rule of a `whole` first receipt. */
export function receiptEntries(
  keys: readonly string[],
  rows: readonly ReceiptRow[],
): (number | undefined)[] {
  const byKey = new Map(rows.map((row) => [row.key, row]));
  const first = byKey.get(keys[0] ?? "");
  if (first?.whole === true) return keys.map(() => Number(first.entry_id));
  return keys.map((key) => {
    const row = byKey.get(key);
    return row === undefined ? undefined : Number(row.entry_id);
  });
}

export async function statusGone(tx: Queryable, entryId: number): Promise<void> {
  await tx.query(
    `UPDATE journal.entries SET status = NULL, previews = NULL
       WHERE id = $1 AND (status IS NOT NULL OR previews IS NOT NULL)`,
    [entryId],
  );
}

export function entryOf(row: EntryRow): JournalEntry | undefined {
  const message = parseJson(row.message);
  if (!isInboundMessage(message)) return undefined;
  return {
    id: Number(row.id),
    key: row.key,
    state: row.state,
    owner: row.owner,
    message,
    receivedAtMs: Number(row.received_at),
    startedAtMs: row.started_at === null ? undefined : Number(row.started_at),
  };
}

/** The records of `rows`, with their steps in the order they were first recorded. */
export async function repliesOf(tx: Queryable, rows: readonly ReplyRow[]): Promise<OutboxRecord[]> {
  if (rows.length === 0) return [];
  const steps = await tx.query<{ reply_id: string; key: string; result: StepResult }>(
    `SELECT reply_id, key, result FROM journal.reply_steps
       WHERE reply_id = ANY($1::text[]) ORDER BY seq`,
    [rows.map((row) => row.id)],
  );
  const stepsOf = new Map<string, Map<string, StepResult>>();
  for (const step of steps.rows) {
    const of = stepsOf.get(step.reply_id) ?? new Map<string, StepResult>();
    of.set(step.key, step.result);
    stepsOf.set(step.reply_id, of);
  }
  return rows.map((row) => replyOf(row, stepsOf.get(row.id) ?? new Map()));
}

function replyOf(row: ReplyRow, steps: ReadonlyMap<string, StepResult>): OutboxRecord {
  const target = parseJson(row.target);
  if (!isChatTarget(target)) throw new Error(`outbox reply ${row.id} has no valid target`);
  const text = parseJson(row.text);
  if (typeof text !== "string") throw new Error(`outbox reply ${row.id} has no valid text`);
  // A plan that does not read back (it cannot, short of editing the table) is planned anew.
  const plan = row.plan === null ? undefined : parseJson(row.plan);
  return {
    id: row.id,
    entryId: row.entry_id === null ? undefined : Number(row.entry_id),
    profile: row.profile,
    platform: row.platform,
    sessionKey: row.session_key,
    slot: row.slot,
    target,
    text,
    state: row.state,
    owner: row.owner,
    steps,
    attempts: row.attempts,
    createdAtMs: Number(row.created_at),
    notBeforeMs: Number(row.not_before),
    lastError: row.last_error ?? undefined,
    plan: isPlanRecord(plan) ? plan : undefined,
    ...(row.plain ? { plain: true } : {}),
  };
}
