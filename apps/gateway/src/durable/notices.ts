import {
  displayName,
  type MediaOutcome,
  type MediaPlan,
  noticeFor,
  PlanDefaults,
} from "@mediagate/media";
import type { DeliveryOutcome, Platform, StepResult } from "../channels/types.js";
import { isTextStepKey } from "./step-keys.js";

/** The chat's notice for a file the platform did not take (or may not have). */
export function deliveryNotice(outcome: DeliveryOutcome): string | undefined {
  switch (outcome.status) {
    case "delivered":
    case "pending":
      return undefined;
    case "upload_failed":
      return `⚠️ Couldn't deliver ${displayName(outcome.path)}: the upload failed.`;
    case "rate_limited":
      return `⚠️ Couldn't deliver ${displayName(outcome.path)}: the platform is rate-limiting uploads (retry after ${Math.ceil(outcome.retryAfterSeconds)} s).`;
    case "unconfirmed":
      return `⚠️ ${displayName(outcome.path)} may not have arrived: the connection broke while it was being sent, and it is not sent twice.`;
  }
}

/** The notice for reply text whose send may not have arrived (and is not sent twice). */
export const TextUnconfirmedText =
  "⚠️ This reply may not have arrived in full: the connection broke (or the gateway restarted) while it was being sent, and it is not sent twice.";

const PlatformNames: Readonly<Record<Platform, string>> = {
  telegram: "Telegram",
  discord: "Discord",
  console: "the console",
};

/**
 * The notice for reply text the platform refused, or that could not be sent at all: `whole`,
 * none of its parts arrived.
 */
export function textFailedText(platform: Platform, whole: boolean): string {
  const what = whole ? "this reply's text" : "part of this reply's text";
  return `⚠️ Couldn't deliver ${what}: ${PlatformNames[platform]} did not take it.`;
}

/**
 * The lines for the reply's own text, by what its recorded steps came to: one when a part may
 * not have arrived, one when a part was not delivered; none when every part was sent. The
 * chat hears of every part of a reply that ended without delivery, as of every file.
 */
export function textNotices(steps: ReadonlyMap<string, StepResult>, platform: Platform): string[] {
  const results = [...steps].filter(([key]) => isTextStepKey(key)).map(([, result]) => result);
  const failed = results.filter((result) => result === "failed").length;
  return [
    ...(results.includes("unconfirmed") ? [TextUnconfirmedText] : []),
    ...(failed > 0 ? [textFailedText(platform, failed === results.length)] : []),
  ];
}

/** How many names the line for files over a reply's cap shows before "and N more". */
const OverCapNamesShown = 3;

/**
 * The one line for the files a reply named past the files one reply sends
 * (`PlanDefaults.maxFiles`): how many, the first few names, and why, so the user knows
 * they were left out on purpose (and that asking for fewer at a time gets them).
 */
export function overMaxFilesText(paths: readonly string[]): string {
  const shown = paths.slice(0, OverCapNamesShown).map(displayName);
  const more = paths.length - shown.length;
  const names = more > 0 ? `${shown.join(", ")} and ${more} more` : shown.join(", ");
  const count = paths.length === 1 ? "1 more file was" : `${paths.length} more files were`;
  return `⚠️ ${count} not sent (${names}): one reply sends at most ${PlanDefaults.maxFiles} files.`;
}

/**
 * One line per file the plan did not mark ready: unreachable, denied (the path is never
 * echoed), too large (size and limit); the files past the reply's cap share one line
 * ({@link overMaxFilesText}), however many the reply named. Outcomes in `except` are left out
 * (a resumed plan's files lost since it was recorded: their lines go with the delivery's).
 */
export function planNotices(
  plan: Pick<MediaPlan, "outcomes">,
  except: readonly MediaOutcome[] = [],
): string[] {
  const lines: string[] = [];
  const overCap: string[] = [];
  for (const outcome of plan.outcomes) {
    if (outcome.status === "ready" || except.includes(outcome)) continue;
    if (outcome.status === "unreachable" && outcome.reason === "over_max_files") {
      overCap.push(outcome.path);
      continue;
    }
    const text = noticeFor(outcome);
    if (text !== undefined) lines.push(text);
  }
  if (overCap.length > 0) lines.push(overMaxFilesText(overCap));
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
