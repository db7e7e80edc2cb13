import type { ApprovalsView, ApprovalView } from "@mediagate/web";
import { Defaults } from "../defaults.js";
import { InBrowser, printable } from "../printable.js";
import type { ProfileRuntime } from "../profiles/profile-runtime.js";

/**
 * The console's Approvals page (docs/web-console.md, "Approvals"): each profile's newest
 * `Defaults.approvals.listed` questions from its state database, with who asked, what for and
 * how each ended, all profiles together and newest first.
 */
export async function approvalsView(
  runtimes: ReadonlyMap<string, ProfileRuntime>,
): Promise<ApprovalsView> {
  const approvals: ApprovalView[] = [];
  for (const runtime of runtimes.values()) {
    for (const record of await runtime.store.recentApprovals(Defaults.approvals.listed)) {
      approvals.push({
        id: record.id,
        profile: runtime.name,
        sessionKey: record.sessionKey,
        platform: record.platform,
        chatId: record.chatId,
        requester: record.requester,
        // Chat users' words (the command asked about, an approver's name): escaped, so a bidi
        // override or a control cannot disguise what was approved (src/printable.ts).
        action: printable(record.action, InBrowser),
        reason: printable(record.reason, InBrowser),
        status: record.status,
        createdMs: record.createdMs,
        expiresMs: record.expiresMs,
        decidedBy: record.decidedBy,
        decidedByName:
          record.decidedByName === undefined
            ? undefined
            : printable(record.decidedByName, InBrowser),
        decidedMs: record.decidedMs,
      });
    }
  }
  approvals.sort((a, b) => b.createdMs - a.createdMs);
  return { approvals };
}
