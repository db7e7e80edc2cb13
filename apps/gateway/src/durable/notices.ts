import { type MediaOutcome, type MediaPlan, noticeFor } from "@mediagate/media";
import type { DeliveryOutcome } from "../channels/types.js";

function basename(path: string): string {
  const parts = path.split("/");
  return parts[parts.length - 1] || path;
}

/** The chat's notice for a file the platform did not take (or may not have). */
export function deliveryNotice(outcome: DeliveryOutcome): string | undefined {
  switch (outcome.status) {
    case "delivered":
    case "pending":
      return undefined;
    case "upload_failed":
      return `⚠️ Couldn't deliver ${basename(outcome.path)}: the upload failed.`;
    case "rate_limited":
      return `⚠️ Couldn't deliver ${basename(outcome.path)}: the platform is rate-limiting uploads (retry after ${Math.ceil(outcome.retryAfterSeconds)} s).`;
    case "unconfirmed":
      return `⚠️ ${basename(outcome.path)} may not have arrived: the connection broke while it was being sent, and it is not sent twice.`;
  }
}

/**
 * One line per file the plan did not mark ready: unreachable, denied (the path is never
 * echoed), too large (size and limit). Outcomes in `except` are left out (a resumed plan's
 * files lost since it was recorded: their lines go with the delivery's).
 */
export function planNotices(plan: MediaPlan, except: readonly MediaOutcome[] = []): string[] {
  const lines: string[] = [];
  for (const outcome of plan.outcomes) {
    if (outcome.status === "ready" || except.includes(outcome)) continue;
    const text = noticeFor(outcome);
    if (text !== undefined) lines.push(text);
  }
  return lines;
}

/**
 * What a status message a crash left showing reads after the next start, when its turn was
 * cut off (docs/durability.md): `rerun`, the turn runs again (and shows a status of its own).
 */
export function statusCutOffText(rerun: boolean): string {
  return rerun ? "⏹ cut off by a restart; running it again" : "⏹ cut off by a restart";
}

/** What a leftover status of a turn that had ended reads when the platform refuses its delete. */
export const StatusEndedText = "⌛ ended";
