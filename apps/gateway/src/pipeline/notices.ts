import { noticeFor } from "@mediagate/media";
import type { DeliveryOutcome } from "../channels/types.js";
import { type Middleware, say } from "./types.js";

function basename(path: string): string {
  const parts = path.split("/");
  return parts[parts.length - 1] || path;
}

/** The chat's notice for a file the platform did not take. */
export function deliveryNotice(outcome: DeliveryOutcome): string | undefined {
  switch (outcome.status) {
    case "delivered":
      return undefined;
    case "upload_failed":
      return `⚠️ Couldn't deliver ${basename(outcome.path)}: the upload failed.`;
    case "rate_limited":
      return `⚠️ Couldn't deliver ${basename(outcome.path)}: the platform is rate-limiting uploads (retry after ${Math.ceil(outcome.retryAfterSeconds)} s).`;
  }
}

/**
 * Step 8: one message with a notice per file that did not arrive: unreachable, denied (the path
 * is never echoed), too large (size and limit), upload failed, rate limited.
 */
export const sendNotices: Middleware = async (ctx, next) => {
  const lines: string[] = [];
  for (const outcome of ctx.plan?.outcomes ?? []) {
    if (outcome.status === "ready") continue;
    const text = noticeFor(outcome);
    if (text !== undefined) lines.push(text);
  }
  for (const outcome of ctx.report?.outcomes ?? []) {
    const text = deliveryNotice(outcome);
    if (text !== undefined) lines.push(text);
  }
  if (lines.length > 0) await say(ctx, lines.join("\n"));
  await next();
};
