import type { MediaPlan } from "@mediagate/media";
import type { DeliveryReport, StepResult } from "../channels/types.js";
import { isTextStepKey } from "./step-keys.js";

/** One part of a reply and what became of it in a delivery attempt (for the turn's log line). */
export interface DeliveryItem {
  /** `text`, or the file's kind (`photo`, `document`, …; `file` when planning could not tell). */
  readonly kind: string;
  /**
   * Text: the worst result of its chunks (`sent`, `unconfirmed`, `failed`, or `pending` when
   * some were left for a later attempt). A file: its delivery status (`delivered`,
   * `upload_failed`, `rate_limited`, `unconfirmed`, `pending`) or why it was not sent
   * (`denied`, `unreachable`, `too_large`).
   */
  readonly outcome: string;
}

/** Text step results, best to worst. */
const TextRank: readonly StepResult[] = ["sent", "sending", "unconfirmed", "failed"];

/**
 * What each part of a reply came to: its text (when it has any), then every file it tagged,
 * in reply order. `done` holds the steps recorded so far (earlier attempts' too).
 */
export function deliveryItems(
  plan: MediaPlan,
  report: DeliveryReport | undefined,
  done: ReadonlyMap<string, StepResult>,
): DeliveryItem[] {
  const items: DeliveryItem[] = [];
  if (plan.text.trim() !== "") items.push({ kind: "text", outcome: textOutcome(report, done) });
  let ready = 0;
  for (const outcome of plan.outcomes) {
    if (outcome.status === "ready") {
      const delivered = report?.outcomes[ready++];
      items.push({ kind: outcome.kind, outcome: delivered?.status ?? "pending" });
    } else {
      items.push({ kind: "kind" in outcome ? outcome.kind : "file", outcome: outcome.status });
    }
  }
  return items;
}

function textOutcome(
  report: DeliveryReport | undefined,
  done: ReadonlyMap<string, StepResult>,
): string {
  if (report === undefined || report.textPending === true) return "pending";
  let worst = 0;
  for (const [key, result] of done) {
    if (isTextStepKey(key)) worst = Math.max(worst, TextRank.indexOf(result));
  }
  // A channel that records no steps (the console) sent the text when it returned.
  return TextRank[worst] ?? "sent";
}
