import type { ReadyMedia } from "@mediagate/media";
import type { DeliveryOutcome, StepResult } from "../channels/types.js";

/**
 * What sending a step again does on a platform, which decides what a step an earlier process
 * recorded `sending` and never finished means: its request may be in the chat
 * (docs/durability.md, "Delivery from the outbox").
 */
export type Idempotence =
  /**
   * The platform drops a repeated request (Discord: every create carries a nonce derived from
   * the reply and the step, with `enforce_nonce`): the step is sent again and posts once.
   */
  | "idempotent"
  /**
   * Nothing drops a repeat and the policy prefers twice to never (Telegram under
   * `delivery.ambiguousSends: at-least-once`): the step is sent again.
   */
  | "at-least-once"
  /**
   * Nothing drops a repeat and the policy prefers never to twice (Telegram under
   * `at-most-once`, the default): the step is not sent again; it is `unconfirmed`.
   */
  | "at-most-once";

/** Whether a step recorded as `result` (undefined: not recorded) is to be sent (again). */
export function sendsAgain(result: StepResult | undefined, idempotence: Idempotence): boolean {
  if (result === undefined) return true;
  return result === "sending" && idempotence !== "at-most-once";
}

/**
 * The outcome of a file whose step an earlier attempt recorded as `result`, or undefined when
 * the file is to be sent (again): its step is not recorded, or it was cut off mid-send on a
 * platform where sending again is safe or wanted (see {@link Idempotence}).
 */
export function earlierOutcome(
  item: ReadyMedia,
  result: StepResult | undefined,
  idempotence: Idempotence,
): DeliveryOutcome | undefined {
  if (sendsAgain(result, idempotence)) return undefined;
  switch (result) {
    case "sent":
      return { status: "delivered", path: item.path, kind: item.kind };
    case "unconfirmed":
    case "sending":
      return { status: "unconfirmed", path: item.path };
    case "failed":
      return {
        status: "upload_failed",
        path: item.path,
        error: "not delivered by an earlier attempt",
      };
    case undefined:
      return undefined;
  }
}
