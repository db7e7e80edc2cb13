import type { ReadyMedia } from "@mediagate/media";
import type { DeliveryOutcome } from "../types.js";
import { planDeliverySteps } from "./delivery-steps.js";
import { failedOutcome, type MediaSendContext, sendAlbum, sendSingle } from "./send-media.js";

/** Sends text as messages; must not throw (failures are logged by the caller's function). */
export type TextSender = (text: string) => Promise<void>;

/**
 * Runs the steps of one reply (see {@link planDeliverySteps}) and returns one outcome per
 * ready item, in plan order. Never throws.
 *
 * Once Telegram answers with a wait over the cap (flood control), the rest of the reply is
 * not attempted: every later item is reported `rate_limited` with the time still to wait and
 * later text is skipped — more calls would only be refused and prolong the limit.
 */
export async function deliverReply(
  ctx: MediaSendContext,
  text: string,
  items: readonly ReadyMedia[],
  sendText: TextSender,
): Promise<DeliveryOutcome[]> {
  const outcomes: (DeliveryOutcome | undefined)[] = items.map(() => undefined);
  let limitedUntil: number | undefined;
  const secondsLeft = (): number | undefined => {
    if (limitedUntil === undefined) return undefined;
    return Math.max(1, Math.ceil((limitedUntil - Date.now()) / 1000));
  };
  const steps = planDeliverySteps(
    text,
    items.map((item) => item.kind),
  );
  for (const step of steps) {
    const waiting = secondsLeft();
    if (step.type === "text") {
      if (waiting === undefined) await sendText(step.text);
      else ctx.logger.warn({ retryAfterSeconds: waiting }, "reply text skipped: rate limited");
      continue;
    }
    const indices = step.type === "album" ? step.indices : [step.index];
    const stepItems = indices.map((i) => items[i]).filter((i): i is ReadyMedia => i !== undefined);
    if (waiting !== undefined || ctx.signal?.aborted) {
      indices.forEach((index, n) => {
        const item = stepItems[n];
        if (item === undefined) return;
        outcomes[index] =
          waiting === undefined
            ? failedOutcome(item, new Error("delivery aborted"), ctx.token)
            : { status: "rate_limited", path: item.path, retryAfterSeconds: waiting };
      });
      continue;
    }
    const result =
      step.type === "album"
        ? await sendAlbum(ctx, stepItems, step.caption)
        : await sendSingle(ctx, stepItems[0] as ReadyMedia, step.caption);
    result.outcomes.forEach((outcome, n) => {
      const index = indices[n];
      if (index !== undefined) outcomes[index] = outcome;
      if (outcome.status === "rate_limited") {
        limitedUntil = Math.max(limitedUntil ?? 0, Date.now() + outcome.retryAfterSeconds * 1000);
      }
    });
    if (step.caption !== undefined && !result.captionDelivered && secondsLeft() === undefined) {
      // The media carrying the text failed: the text still goes, as messages.
      await sendText(step.caption);
    }
  }
  return outcomes.map(
    (outcome, i) =>
      outcome ?? failedOutcome(items[i] as ReadyMedia, new Error("not attempted"), ctx.token),
  );
}
