import type { Queryable } from "../postgres/database.js";
import {
  type AddApprovalResult,
  type ApprovalRecord,
  type ApprovalStatus,
  chatKey,
  type DecideResult,
} from "./approvals.js";
import { StateLockClass } from "./postgres-pairing.js";

/** Approvals (docs/approvals.md) on PostgreSQL, with the semantics of approvals.ts. */

interface ApprovalRow {
  body: string;
  status: string;
  decided_by: string | null;
  decided_by_name: string | null;
  decided_at: string | null;
  message_id: string | null;
}

function fromRow(row: ApprovalRow): ApprovalRecord {
  const body = JSON.parse(row.body) as ApprovalRecord;
  return {
    ...body,
    status: row.status as ApprovalStatus,
    messageId: row.message_id ?? undefined,
    decidedBy: row.decided_by ?? undefined,
    decidedByName: row.decided_by_name ?? undefined,
    decidedMs: row.decided_at === null ? undefined : Number(row.decided_at),
  };
}

/**
 * Inserts a pending approval unless `maxPending` are pending in the profile already (counted
 * under the profile's approvals lock, so two gateways never both pass the cap); decided ones
 * older than `keepMs` are dropped first.
 */
export async function addApproval(
  tx: Queryable,
  profile: string,
  record: ApprovalRecord,
  maxPending: number,
  keepMs: number,
): Promise<AddApprovalResult> {
  await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
    StateLockClass.approvals,
    profile,
  ]);
  await tx.query(
    "DELETE FROM state_approvals WHERE profile = $1 AND status <> 'pending' AND created_at < $2",
    [profile, record.createdMs - keepMs],
  );
  const pending = Number(
    (
      await tx.query<{ n: string }>(
        "SELECT count(*) AS n FROM state_approvals WHERE profile = $1 AND status = 'pending'",
        [profile],
      )
    ).rows[0]?.n ?? 0,
  );
  if (pending >= maxPending) return { added: false, pending };
  const { status: _status, messageId: _m, decidedBy: _d, decidedMs: _t, ...body } = record;
  await tx.query(
    `INSERT INTO state_approvals (profile, id, session_id, chat, status, body, created_at, expires_at)
     VALUES ($1, $2, $3, $4, 'pending', $5, $6, $7)`,
    [
      profile,
      record.id,
      record.sessionId,
      chatKey(record.platform, record.chatId, record.threadId),
      JSON.stringify(body),
      record.createdMs,
      record.expiresMs,
    ],
  );
  return { added: true };
}

export async function setApprovalMessage(
  db: Queryable,
  profile: string,
  id: string,
  messageId: string,
): Promise<void> {
  await db.query("UPDATE state_approvals SET message_id = $3 WHERE profile = $1 AND id = $2", [
    profile,
    id,
    messageId,
  ]);
}

export async function getApproval(
  db: Queryable,
  profile: string,
  id: string,
): Promise<ApprovalRecord | undefined> {
  const row = (
    await db.query<ApprovalRow>("SELECT * FROM state_approvals WHERE profile = $1 AND id = $2", [
      profile,
      id,
    ])
  ).rows[0];
  return row === undefined ? undefined : fromRow(row);
}

/** Decides a pending approval; only the first decision counts (one conditional UPDATE). */
export async function decideApproval(
  db: Queryable,
  profile: string,
  id: string,
  status: Exclude<ApprovalStatus, "pending">,
  decidedBy: string,
  decidedByName: string | undefined,
  nowMs: number,
): Promise<DecideResult> {
  const changed = await db.query(
    `UPDATE state_approvals SET status = $3, decided_by = $4, decided_by_name = $5, decided_at = $6
     WHERE profile = $1 AND id = $2 AND status = 'pending'`,
    [profile, id, status, decidedBy, decidedByName ?? null, nowMs],
  );
  return { decided: changed.rowCount === 1, record: await getApproval(db, profile, id) };
}

export async function sessionAllowed(
  db: Queryable,
  profile: string,
  sessionId: string,
): Promise<boolean> {
  const found = await db.query(
    `SELECT 1 FROM state_approvals
     WHERE profile = $1 AND session_id = $2 AND status = 'allowed_session' LIMIT 1`,
    [profile, sessionId],
  );
  return (found.rowCount ?? 0) > 0;
}

export async function latestPending(
  db: Queryable,
  profile: string,
  platform: string,
  chatId: string,
  threadId: string | undefined,
): Promise<ApprovalRecord | undefined> {
  const row = (
    await db.query<ApprovalRow>(
      `SELECT * FROM state_approvals WHERE profile = $1 AND chat = $2 AND status = 'pending'
       ORDER BY created_at DESC, seq DESC LIMIT 1`,
      [profile, chatKey(platform, chatId, threadId)],
    )
  ).rows[0];
  return row === undefined ? undefined : fromRow(row);
}

export async function recentApprovals(
  db: Queryable,
  profile: string,
  limit: number,
): Promise<ApprovalRecord[]> {
  const rows = await db.query<ApprovalRow>(
    "SELECT * FROM state_approvals WHERE profile = $1 ORDER BY created_at DESC, seq DESC LIMIT $2",
    [profile, Math.max(0, Math.trunc(limit))],
  );
  return rows.rows.map(fromRow);
}
