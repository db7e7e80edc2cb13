import { safeHead } from "../agents/tools-text.js";
import type { ProfileConfig } from "../config/types.js";
import {
  formatPairingCode,
  normalizePairingCode,
  type PairingApproveResult,
  type PairingRequestResult,
  pairedUserName,
} from "../state/pairing.js";
import type { StateStore } from "../state/state-store.js";

/**
 * Pairing's chat side (docs/security.md, "Pairing"): what an unknown user is told in a DM and
 * what `/approve CODE` does and answers.
 */

/** `n minutes` (at least 1), or `n hours` from two hours on. */
export function describeSpan(ms: number): string {
  const minutes = Math.max(1, Math.ceil(ms / 60_000));
  if (minutes >= 120 && minutes % 60 === 0) return `${minutes / 60} hours`;
  return minutes === 1 ? "1 minute" : `${minutes} minutes`;
}

/** `2026-06-01 07:15 UTC` */
function dateTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 10)} ${clockTime(ms)}`;
}

/** `07:15 UTC` */
function clockTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 16)} UTC`;
}

/**
 * The answer to an unknown user's DM in a pairing profile. Their message is not kept: once
 * approved they send it again (the code's text says so).
 */
export function describePairingRequest(
  result: PairingRequestResult,
  user: string,
  nowMs: number,
): string {
  if (result.status === "full") {
    return "⏳ This bot needs an admin's approval, and too many requests are waiting for one right now. Try again later.";
  }
  const code = formatPairingCode(result.code);
  const first =
    result.status === "issued"
      ? `🔑 This bot needs an admin's approval. Your one-time code: ${code}`
      : `🔑 You already have a code waiting for an admin: ${code}`;
  return [
    first,
    `Send it to an admin of this bot: they approve you with /approve ${code}. It expires in ${describeSpan(result.expiresAtMs - nowMs)}.`,
    `This message was not kept: once approved, send it again. (You are ${user}.)`,
  ].join("\n");
}

/** What `/approve` did: the admin's answer, and the approved user's chat to tell. */
export interface ApproveOutcome {
  readonly text: string;
  readonly approved?: { readonly user: string; readonly chatId: string } | undefined;
}

/** What an approved user is told in the DM they asked from. */
export const ApprovedNotice =
  "✅ An admin approved you: you may use this bot now. Send your message again.";

/** The CLI's approval, for the lock message. */
const CliApprove = "`mediagate pairing approve CODE` on the gateway's host";

/**
 * `/approve CODE` by `approver` (an admin's `<platform>:<id>`): approves the code's user, held
 * to the profile's attempt cap (`pairing.maxFailedApprovals` wrong codes in a row lock it for
 * `pairing.lockSeconds`). A text that cannot be a code is answered without counting.
 */
export async function approveInChat(
  profile: ProfileConfig,
  store: Pick<StateStore, "approvePairing">,
  approver: string,
  typed: string | undefined,
  nowMs: number,
): Promise<ApproveOutcome> {
  if (typed === undefined) {
    return {
      text: "Usage: /approve CODE — the code a user got when they wrote to this bot in a direct message (like ABCD-EFGH).",
    };
  }
  const code = normalizePairingCode(typed);
  if (code === undefined) {
    return {
      // Cut between code points: half an emoji makes Telegram refuse the whole answer.
      text: `⛔ "${safeHead(typed, 40)}" is not a pairing code (8 letters and digits, like ABCD-EFGH); nothing was done.`,
    };
  }
  const { pairing } = profile;
  const result = await store.approvePairing(code, approver, {
    maxFailed: pairing.maxFailedApprovals,
    lockMs: pairing.lockSeconds * 1000,
  });
  return outcomeText(result, formatPairingCode(code), nowMs);
}

function outcomeText(result: PairingApproveResult, code: string, nowMs: number): ApproveOutcome {
  switch (result.status) {
    case "approved": {
      const who = pairedUserName(result);
      return {
        text: `✅ Approved ${who}: they may use this bot now, as a user (not an admin). \`mediagate pairing revoke ${result.user}\` takes it back.`,
        approved: { user: result.user, chatId: result.chatId },
      };
    }
    case "used": {
      const who = pairedUserName(result);
      return {
        text: `☑️ ${code} was used already: ${who} was approved by ${result.approvedBy} at ${dateTime(result.approvedAtMs)}, and still is. Nothing was done, and it does not count as a wrong code.`,
      };
    }
    case "locked":
      return {
        text: `🔒 /approve is locked after too many wrong codes, for ${describeSpan(result.lockedUntilMs - nowMs)} more (until ${clockTime(result.lockedUntilMs)}); no code was checked. ${CliApprove} still works.`,
      };
    case "unknown": {
      const none = `⛔ No pending code ${code} (mistyped, already used, revoked or expired).`;
      if (result.lockedUntilMs !== undefined) {
        return {
          text: `${none} 🔒 Too many wrong codes in a row: /approve is locked for ${describeSpan(result.lockedUntilMs - nowMs)} (until ${clockTime(result.lockedUntilMs)}). ${CliApprove} still works.`,
        };
      }
      const left = result.attemptsLeft ?? 0;
      return {
        text: `${none} ${left} more wrong ${left === 1 ? "code locks" : "codes lock"} /approve for a while.`,
      };
    }
  }
}
