import type Database from "better-sqlite3";

/**
 * Where an approval stands (docs/approvals.md). `pending` until one of: an approver allowed it
 * once (`allowed`) or for the rest of the session (`allowed_session`), denied it (`denied`),
 * nobody answered in time (`expired`), the turn ended first (/stop, /reset, a newer message:
 * `cancelled`) or the process that waited for it is gone (`interrupted`, found after a restart).
 */
export type ApprovalStatus =
  | "pending"
  | "allowed"
  | "allowed_session"
  | "denied"
  | "expired"
  | "cancelled"
  | "interrupted";

/** Who may decide an approval: the person whose message started the turn (or an admin), or admins only. */
export type ApproverRule = "sender" | "admins";

/** One action the agent asked to take, as the state store keeps it. Plain JSON. */
export interface ApprovalRecord {
  /** Random and unguessable: the buttons' callback data carries it. */
  readonly id: string;
  readonly sessionKey: string;
  /** The session id when asked: "allow for this session" lasts until /reset rotates it. */
  readonly sessionId: string;
  readonly platform: string;
  readonly chatId: string;
  readonly threadId?: string | undefined;
  /** The message with the buttons, once posted. */
  readonly messageId?: string | undefined;
  /** `<platform>:<id>` of the person whose message started the turn. */
  readonly requester: string;
  readonly approvers: ApproverRule;
  /** What the agent wants to do, as shown in the chat (`$ rm -rf build`, `write /etc/x`). */
  readonly action: string;
  /** The rule that asked (`always`, `command pattern …`, `network use`, …). */
  readonly reason: string;
  /** The gateway process that waits for the answer (one id per start). */
  readonly waiter: string;
  readonly createdMs: number;
  readonly expiresMs: number;
  readonly status: ApprovalStatus;
  /** `<platform>:<id>` of whoever decided (`timer` for an expiry, `gateway` for a cancel). */
  readonly decidedBy?: string | undefined;
  readonly decidedByName?: string | undefined;
  readonly decidedMs?: number | undefined;
}

/** What {@link addApproval} did. */
export type AddApprovalResult =
  | { readonly added: true }
  | { readonly added: false; readonly pending: number };

/** The result of a decision: whether this call decided it, and the record as it is now. */
export interface DecideResult {
  readonly decided: boolean;
  readonly record: ApprovalRecord | undefined;
}

interface ApprovalRow {
  id: string;
  body: string;
  status: string;
  decided_by: string | null;
  decided_by_name: string | null;
  decided_at: number | null;
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
    decidedMs: row.decided_at ?? undefined,
  };
}

/**
 * Inserts a pending approval unless `maxPending` are pending in the profile already; decided
 * approvals older than `keepMs` are dropped first (the table stays bounded).
 */
export function addApproval(
  db: Database.Database,
  record: ApprovalRecord,
  maxPending: number,
  keepMs: number,
): AddApprovalResult {
  db.prepare("DELETE FROM approvals WHERE status <> 'pending' AND created_at < ?").run(
    record.createdMs - keepMs,
  );
  const pending =
    db
      .prepare<[], { n: number }>("SELECT count(*) AS n FROM approvals WHERE status = 'pending'")
      .get()?.n ?? 0;
  if (pending >= maxPending) return { added: false, pending };
  const { status: _status, messageId: _m, decidedBy: _d, decidedMs: _t, ...body } = record;
  db.prepare(
    `INSERT INTO approvals (id, session_id, chat, status, body, created_at, expires_at)
     VALUES (?, ?, ?, 'pending', ?, ?, ?)`,
  ).run(
    record.id,
    record.sessionId,
    chatKey(record.platform, record.chatId, record.threadId),
    JSON.stringify(body),
    record.createdMs,
    record.expiresMs,
  );
  return { added: true };
}

/** The key approvals of one chat (and thread) share, for a typed `/allow`. */
export function chatKey(platform: string, chatId: string, threadId: string | undefined): string {
  return threadId === undefined ? `${platform}:${chatId}` : `${platform}:${chatId}:${threadId}`;
}

export function setApprovalMessage(db: Database.Database, id: string, messageId: string): void {
  db.prepare("UPDATE approvals SET message_id = ? WHERE id = ?").run(messageId, id);
}

export function getApproval(db: Database.Database, id: string): ApprovalRecord | undefined {
  const row = db.prepare<[string], ApprovalRow>("SELECT * FROM approvals WHERE id = ?").get(id);
  return row === undefined ? undefined : fromRow(row);
}

/**
 * Decides a pending approval: only the first decision counts (a second press, a press racing
 * the expiry or a /stop finds it decided and changes nothing).
 */
export function decideApproval(
  db: Database.Database,
  id: string,
  status: Exclude<ApprovalStatus, "pending">,
  decidedBy: string,
  decidedByName: string | undefined,
  nowMs: number,
): DecideResult {
  const changed = db
    .prepare(
      `UPDATE approvals SET status = ?, decided_by = ?, decided_by_name = ?, decided_at = ?
       WHERE id = ? AND status = 'pending'`,
    )
    .run(status, decidedBy, decidedByName ?? null, nowMs, id).changes;
  return { decided: changed === 1, record: getApproval(db, id) };
}

/** Whether an approver allowed `sessionId` to act without asking (until /reset). */
export function sessionAllowed(db: Database.Database, sessionId: string): boolean {
  return (
    db
      .prepare(
        "SELECT 1 FROM approvals WHERE session_id = ? AND status = 'allowed_session' LIMIT 1",
      )
      .get(sessionId) !== undefined
  );
}

/** The newest pending approval of one chat (and thread), for a typed `/allow` or `/deny`. */
export function latestPending(
  db: Database.Database,
  platform: string,
  chatId: string,
  threadId: string | undefined,
): ApprovalRecord | undefined {
  const row = db
    .prepare<[string], ApprovalRow>(
      "SELECT * FROM approvals WHERE chat = ? AND status = 'pending' ORDER BY created_at DESC, rowid DESC LIMIT 1",
    )
    .get(chatKey(platform, chatId, threadId));
  return row === undefined ? undefined : fromRow(row);
}

/** The newest approvals of the profile, newest first (the web console). */
export function recentApprovals(db: Database.Database, limit: number): ApprovalRecord[] {
  return db
    .prepare<[number], ApprovalRow>(
      "SELECT * FROM approvals ORDER BY created_at DESC, rowid DESC LIMIT ?",
    )
    .all(limit)
    .map(fromRow);
}
