import type { ApprovalSettings } from "../config/types.js";
import type { ApprovalRecord } from "../state/approvals.js";

/** What a chat without buttons (the console) is told to type. */
export const TypedHint = "Reply /allow (once), /allow session (for this session) or /deny.";

function minutes(seconds: number): string {
  const n = Math.max(1, Math.round(seconds / 60));
  return n === 1 ? "1 min" : `${n} min`;
}

/** The question shown with the buttons. */
export function questionText(record: ApprovalRecord, settings: ApprovalSettings): string {
  const who = record.approvers === "admins" ? "An admin" : "The person who asked (or an admin)";
  return [
    "🔐 Approval needed: the agent wants to",
    record.action,
    `Why it asks: ${record.reason}. ${who} may decide; nothing runs until then. It expires in ${minutes(settings.expiresSeconds)}.`,
  ].join("\n");
}

/** What the message says once decided (its first line is also the presser's notice). */
export function decidedText(record: ApprovalRecord): string {
  const by = record.decidedByName ?? record.decidedBy ?? "someone";
  const head = (() => {
    switch (record.status) {
      case "allowed":
        return `✅ Allowed once by ${by}`;
      case "allowed_session":
        return `✅ Allowed for this session by ${by}`;
      case "denied":
        return `🚫 Denied by ${by}`;
      case "expired":
        return "⌛ Expired without an answer; not run";
      case "cancelled":
        return "⏹ Not run: the turn ended first";
      case "interrupted":
        return "⚠️ Not run: the gateway restarted while this waited, so this question no longer counts (a message run again asks anew)";
      case "pending":
        return "🔐 Waiting for approval";
    }
  })();
  return `${head}:\n${record.action}`;
}

/** The polite refusal a press or typed answer by someone who may not decide gets. */
export function refusalOf(record: ApprovalRecord): string {
  return record.approvers === "admins"
    ? "Only an admin can decide this; nothing was done."
    : "Only the person who asked (or an admin) can decide this; nothing was done.";
}

const TypedCommands = {
  allowed: "/allow",
  allowed_session: "/allow session",
  denied: "/deny",
} as const;

/**
 * A typed answer sent before the chat's newest question was asked: it was meant for an
 * earlier one (expired or decided since), so it decides nothing.
 */
export function sentBeforeText(
  record: ApprovalRecord,
  status: "allowed" | "allowed_session" | "denied",
): string {
  return [
    `⚠️ Not decided: your ${TypedCommands[status]} was sent before the question waiting now was asked, so it was meant for an earlier one. Waiting now:`,
    record.action,
    `Answer again if you mean this one. ${TypedHint}`,
  ].join("\n");
}
