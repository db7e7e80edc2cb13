import { randomInt } from "node:crypto";

/**
 * Pairing codes (docs/security.md, "Pairing"): what they look like and the shapes the state
 * database answers with. Runs in the state database's worker thread too: node:crypto only.
 */

/**
 * The letters and digits of a code: upper case, without the ones read as another (0/O, 1/I,
 * and L). 31 symbols; 8 of them are 31^8 ≈ 8.5 × 10^11 codes (39.6 bits).
 */
export const PairingAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/** Symbols per code. */
export const PairingCodeLength = 8;

/** A random number in [0, max): `crypto.randomInt` (uniform, no modulo bias); tests replace it. */
export type RandomIndex = (max: number) => number;

/** A new code: {@link PairingCodeLength} symbols of {@link PairingAlphabet}, crypto-random. */
export function generatePairingCode(random: RandomIndex = randomInt): string {
  let code = "";
  for (let i = 0; i < PairingCodeLength; i++)
    code += PairingAlphabet[random(PairingAlphabet.length)];
  return code;
}

/** How a code is shown: `ABCD-EFGH`. */
export function formatPairingCode(code: string): string {
  const half = PairingCodeLength / 2;
  return `${code.slice(0, half)}-${code.slice(half)}`;
}

const CodePattern = new RegExp(`^[${PairingAlphabet}]{${PairingCodeLength}}$`);

/** A code as the chat shows it ({@link formatPairingCode}), wherever it stands in a text. */
const ShownCodePattern = new RegExp(
  `(?<![0-9A-Za-z])[${PairingAlphabet}]{${PairingCodeLength / 2}}-[${PairingAlphabet}]{${PairingCodeLength / 2}}(?![0-9A-Za-z])`,
  "g",
);

/** What a code is shown as where it must not be read (the web console). */
export const MaskedPairingCode = "••••-••••";

/**
 * `text` with every code in it as the chat shows it (`ABCD-EFGH`) replaced by
 * {@link MaskedPairingCode}: for the gateway's own answers outside the chat they went to
 * (docs/security.md, "Pairing": codes never appear in logs or the web console).
 */
export function maskPairingCodes(text: string): string {
  return text.replace(ShownCodePattern, MaskedPairingCode);
}

/**
 * What an admin may type between a code's halves: white space, the hyphen-minus, and the
 * dashes a phone's keyboard or a chat client puts in its place (smart punctuation turns `-`
 * into `–`; a code copied out of a document may carry `‐`, `‑`, `‒`, `—` or `−`).
 */
const CodeSeparators = /[\s\-\u2010-\u2015\u2212]/g;

/**
 * The code an admin typed, as stored: case, spaces and dashes ignored (`abcd efgh`,
 * `ABCD-EFGH`, `ABCD–EFGH`). Undefined when it cannot be a code (a wrong length, a symbol not
 * in the alphabet): such a typo is not a guess and does not count against the attempt cap.
 */
export function normalizePairingCode(text: string): string | undefined {
  const code = text.replace(CodeSeparators, "").toUpperCase();
  return CodePattern.test(code) ? code : undefined;
}

/** The limits a code request is held to (from the profile's `pairing` settings, in ms). */
export interface PairingLimits {
  /** A code expires this long after it was issued. */
  readonly codeTtlMs: number;
  /** Codes that may be pending at once in the profile; a new request past it is refused. */
  readonly maxPending: number;
}

/** The attempt cap of chat approvals (`/approve`); the CLI has none. */
export interface ApprovalGuard {
  /** Wrong codes in a row before approvals lock. */
  readonly maxFailed: number;
  /** How long they stay locked. */
  readonly lockMs: number;
}

/** Who asked for a code: `<platform>:<id>`, their name and the DM chat the code went to. */
export interface PairingRequester {
  readonly user: string;
  readonly userName?: string | undefined;
  readonly chatId: string;
}

/** The answer to a code request of an unknown user in a DM. */
export type PairingRequestResult =
  /** A new code was issued. */
  | { readonly status: "issued"; readonly code: string; readonly expiresAtMs: number }
  /** The user already has a code that has not expired: the same one (not a new one). */
  | { readonly status: "pending"; readonly code: string; readonly expiresAtMs: number }
  /** The profile has `maxPending` codes waiting: none was issued. */
  | { readonly status: "full" };

/** The answer to an approval. */
export type PairingApproveResult =
  | {
      readonly status: "approved";
      readonly user: string;
      readonly userName?: string | undefined;
      readonly chatId: string;
    }
  /**
   * No pending code matches (never issued, already used, expired or revoked). With a guard:
   * the wrong codes left before the lock, or when this one locked approvals, until when.
   */
  | {
      readonly status: "unknown";
      readonly attemptsLeft?: number | undefined;
      readonly lockedUntilMs?: number | undefined;
    }
  /** Approvals are locked after too many wrong codes; nothing was checked. */
  | { readonly status: "locked"; readonly lockedUntilMs: number }
  /**
   * The code was used already: it approved `user`, who still is (two admins approving one
   * request, a message sent twice). Nothing was done, and it is not a wrong code.
   */
  | {
      readonly status: "used";
      readonly user: string;
      readonly userName?: string | undefined;
      readonly approvedAtMs: number;
      readonly approvedBy: string;
    };

/**
 * The answer to a code that approved a user already: from their row of approved users (both
 * stores' rows carry these columns; PostgreSQL's `bigint` read as a number).
 */
export function usedCode(
  user: string,
  row: { user_name: string | null; approved_at: number; approved_by: string },
): PairingApproveResult {
  return {
    status: "used",
    user,
    ...(row.user_name === null ? {} : { userName: row.user_name }),
    approvedAtMs: row.approved_at,
    approvedBy: row.approved_by,
  };
}

/** How an approved user is named in answers: `telegram:123 (ada)`, or the id alone. */
export function pairedUserName(result: {
  readonly user: string;
  readonly userName?: string | undefined;
}): string {
  return result.userName === undefined ? result.user : `${result.user} (${result.userName})`;
}

/** A code waiting for an admin. */
export interface PendingPairing extends PairingRequester {
  readonly code: string;
  readonly createdAtMs: number;
  readonly expiresAtMs: number;
}

/** A user an admin approved. */
export interface PairedUser {
  readonly user: string;
  readonly userName?: string | undefined;
  readonly chatId: string;
  readonly approvedAtMs: number;
  /** `<platform>:<id>` of the admin who approved in chat, or `cli`. */
  readonly approvedBy: string;
}

/** Everything pairing holds in a profile (`mediagate pairing list`). */
export interface PairingList {
  readonly pending: readonly PendingPairing[];
  readonly approved: readonly PairedUser[];
  /** Chat approvals are locked until then (absent: not locked). */
  readonly lockedUntilMs?: number | undefined;
}

/** What `revoke` removed. */
export interface PairingRevokeResult {
  /** Approved users removed (0 or 1). */
  readonly approved: number;
  /** Pending codes removed (0 or 1). */
  readonly pending: number;
}
