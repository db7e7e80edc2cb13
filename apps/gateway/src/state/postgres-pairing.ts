import type { Queryable } from "../postgres/database.js";
import {
  type ApprovalGuard,
  generatePairingCode,
  type PairedUser,
  type PairingApproveResult,
  type PairingLimits,
  type PairingList,
  type PairingRequester,
  type PairingRequestResult,
  type PairingRevokeResult,
  type PendingPairing,
  usedCode,
} from "./pairing.js";
import type { Approver } from "./state-store.js";

/**
 * Pairing (docs/security.md, "Pairing") on PostgreSQL, with the semantics of state-database.ts.
 * The transactional ones run with the profile's pairing lock held (see `lockPairing`): a code
 * request counts the pending codes and an approval counts wrong codes, each a read then a write
 * that two gateways of one profile must not interleave.
 */

interface CodeRow {
  code: string;
  user_id: string;
  user_name: string | null;
  chat_id: string;
  created_at: string;
  expires_at: string;
}

interface PairedRow {
  user_id: string;
  user_name: string | null;
  chat_id: string;
  approved_at: string;
  approved_by: string;
}

interface GuardRow {
  failed_attempts: number;
  locked_until: string;
}

/** The first key of the advisory locks the state store takes per profile (pg_advisory_xact_lock(int, int)). */
export const StateLockClass = {
  pairing: 0x6d670001,
  approvals: 0x6d670002,
  summary: 0x6d670003,
  tasks: 0x6d670004,
};

/** Takes the profile's pairing lock until the transaction ends. */
async function lockPairing(tx: Queryable, profile: string): Promise<void> {
  await tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [
    StateLockClass.pairing,
    profile,
  ]);
}

export async function isPaired(db: Queryable, profile: string, user: string): Promise<boolean> {
  const found = await db.query(
    "SELECT 1 FROM state_paired_users WHERE profile = $1 AND user_id = $2",
    [profile, user],
  );
  return (found.rowCount ?? 0) > 0;
}

async function dropExpiredCodes(tx: Queryable, profile: string, nowMs: number): Promise<void> {
  await tx.query("DELETE FROM state_pairing_codes WHERE profile = $1 AND expires_at <= $2", [
    profile,
    nowMs,
  ]);
}

async function guardOf(
  tx: Queryable,
  profile: string,
): Promise<{ failed: number; lockedUntil: number }> {
  const row = (
    await tx.query<GuardRow>(
      "SELECT failed_attempts, locked_until FROM state_pairing_guard WHERE profile = $1",
      [profile],
    )
  ).rows[0];
  return { failed: row?.failed_attempts ?? 0, lockedUntil: Number(row?.locked_until ?? 0) };
}

async function setGuard(
  tx: Queryable,
  profile: string,
  failed: number,
  lockedUntilMs: number,
  nowMs: number,
) {
  await tx.query(
    `INSERT INTO state_pairing_guard (profile, failed_attempts, locked_until, updated_at)
     VALUES ($1, $2, $3, $4)
     ON CONFLICT (profile) DO UPDATE SET failed_attempts = excluded.failed_attempts,
                                         locked_until = excluded.locked_until,
                                         updated_at = excluded.updated_at`,
    [profile, failed, lockedUntilMs, nowMs],
  );
}

/** An unknown user's code request: see `StateDatabase.requestPairing`. */
export async function requestPairing(
  tx: Queryable,
  profile: string,
  requester: PairingRequester,
  nowMs: number,
  limits: PairingLimits,
): Promise<PairingRequestResult> {
  await lockPairing(tx, profile);
  await dropExpiredCodes(tx, profile, nowMs);
  const pending = (
    await tx.query<CodeRow>(
      "SELECT * FROM state_pairing_codes WHERE profile = $1 AND user_id = $2",
      [profile, requester.user],
    )
  ).rows[0];
  if (pending !== undefined) {
    return { status: "pending", code: pending.code, expiresAtMs: Number(pending.expires_at) };
  }
  const waiting = Number(
    (
      await tx.query<{ n: string }>(
        "SELECT count(*) AS n FROM state_pairing_codes WHERE profile = $1",
        [profile],
      )
    ).rows[0]?.n ?? 0,
  );
  if (waiting >= limits.maxPending) return { status: "full" };
  const expiresAtMs = nowMs + limits.codeTtlMs;
  for (;;) {
    const code = generatePairingCode();
    const inserted = await tx.query(
      `INSERT INTO state_pairing_codes (profile, code, user_id, user_name, chat_id, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (profile, code) DO NOTHING`,
      [
        profile,
        code,
        requester.user,
        requester.userName ?? null,
        requester.chatId,
        nowMs,
        expiresAtMs,
      ],
    );
    if (inserted.rowCount === 1) return { status: "issued", code, expiresAtMs };
  }
}

/** Approves the user of a pending code: see `StateDatabase.approvePairing`. */
export async function approvePairing(
  tx: Queryable,
  profile: string,
  code: string,
  nowMs: number,
  approvedBy: Approver,
  guard: ApprovalGuard | undefined,
): Promise<PairingApproveResult> {
  await lockPairing(tx, profile);
  const state = await guardOf(tx, profile);
  if (guard !== undefined && state.lockedUntil > nowMs) {
    return { status: "locked", lockedUntilMs: state.lockedUntil };
  }
  await dropExpiredCodes(tx, profile, nowMs);
  const row = (
    await tx.query<CodeRow>(
      "DELETE FROM state_pairing_codes WHERE profile = $1 AND code = $2 RETURNING *",
      [profile, code],
    )
  ).rows[0];
  if (row === undefined) {
    const used = (
      await tx.query<PairedRow>(
        `SELECT * FROM state_paired_users WHERE profile = $1 AND code = $2
         ORDER BY approved_at DESC LIMIT 1`,
        [profile, code],
      )
    ).rows[0];
    if (used !== undefined)
      return usedCode(used.user_id, { ...used, approved_at: Number(used.approved_at) });
    if (guard === undefined) return { status: "unknown" };
    const failed = state.failed + 1;
    if (failed >= guard.maxFailed) {
      const lockedUntilMs = nowMs + guard.lockMs;
      await setGuard(tx, profile, 0, lockedUntilMs, nowMs);
      return { status: "unknown", attemptsLeft: 0, lockedUntilMs };
    }
    await setGuard(tx, profile, failed, 0, nowMs);
    return { status: "unknown", attemptsLeft: guard.maxFailed - failed };
  }
  await tx.query(
    `INSERT INTO state_paired_users (profile, user_id, user_name, chat_id, approved_at, approved_by, code)
     VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (profile, user_id) DO UPDATE SET user_name = excluded.user_name,
       chat_id = excluded.chat_id, approved_at = excluded.approved_at,
       approved_by = excluded.approved_by, code = excluded.code`,
    [profile, row.user_id, row.user_name, row.chat_id, nowMs, approvedBy, code],
  );
  if (guard !== undefined) await setGuard(tx, profile, 0, 0, nowMs);
  return {
    status: "approved",
    user: row.user_id,
    ...(row.user_name === null ? {} : { userName: row.user_name }),
    chatId: row.chat_id,
  };
}

/** Removes an approved user and their pending code, or one pending code. */
export async function revokePairing(
  tx: Queryable,
  profile: string,
  target: { readonly user: string } | { readonly code: string },
): Promise<PairingRevokeResult> {
  await lockPairing(tx, profile);
  if ("code" in target) {
    const pending = await tx.query(
      "DELETE FROM state_pairing_codes WHERE profile = $1 AND code = $2",
      [profile, target.code],
    );
    return { approved: 0, pending: pending.rowCount ?? 0 };
  }
  const approved = await tx.query(
    "DELETE FROM state_paired_users WHERE profile = $1 AND user_id = $2",
    [profile, target.user],
  );
  const pending = await tx.query(
    "DELETE FROM state_pairing_codes WHERE profile = $1 AND user_id = $2",
    [profile, target.user],
  );
  return { approved: approved.rowCount ?? 0, pending: pending.rowCount ?? 0 };
}

/** The codes that have not expired, the approved users (oldest first), and the lock. */
export async function listPairing(
  tx: Queryable,
  profile: string,
  nowMs: number,
): Promise<PairingList> {
  const codes = await tx.query<CodeRow>(
    `SELECT * FROM state_pairing_codes WHERE profile = $1 AND expires_at > $2
     ORDER BY created_at, code COLLATE "C"`,
    [profile, nowMs],
  );
  const pending = codes.rows.map(
    (row): PendingPairing => ({
      code: row.code,
      user: row.user_id,
      ...(row.user_name === null ? {} : { userName: row.user_name }),
      chatId: row.chat_id,
      createdAtMs: Number(row.created_at),
      expiresAtMs: Number(row.expires_at),
    }),
  );
  const users = await tx.query<PairedRow>(
    `SELECT * FROM state_paired_users WHERE profile = $1 ORDER BY approved_at, user_id COLLATE "C"`,
    [profile],
  );
  const approved = users.rows.map(
    (row): PairedUser => ({
      user: row.user_id,
      ...(row.user_name === null ? {} : { userName: row.user_name }),
      chatId: row.chat_id,
      approvedAtMs: Number(row.approved_at),
      approvedBy: row.approved_by,
    }),
  );
  const { lockedUntil } = await guardOf(tx, profile);
  return { pending, approved, ...(lockedUntil > nowMs ? { lockedUntilMs: lockedUntil } : {}) };
}
