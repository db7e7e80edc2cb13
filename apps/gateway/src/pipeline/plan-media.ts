import { planMedia } from "@mediagate/media";
import { type Middleware, sessionOf } from "./types.js";

/**
 * Step 6: extracts the reply's MEDIA tags and finds each file on the host (the turn's slot dir,
 * volumes, archive fallback from the turn's container). Every outcome is logged with its candidates.
 * The plan's descriptors are always closed, whatever the later steps do.
 */
export const planReplyMedia: Middleware = async (ctx, next) => {
  const session = sessionOf(ctx);
  const slot = ctx.slot ?? ctx.runtime.slotFor(session.sessionKey);
  const plan = await planMedia(
    ctx.reply ?? "",
    ctx.runtime.translateContext(slot, session.sessionKey),
    ctx.channel.limitsFor?.(ctx.target) ?? ctx.channel.limits,
  );
  ctx.plan = plan;
  try {
    for (const outcome of plan.outcomes) {
      const { candidates, ...rest } = outcome;
      const summary = "file" in rest ? { ...rest, file: undefined } : rest;
      ctx.log.info({ media: summary, candidates }, `media ${outcome.status}`);
    }
    await next();
  } finally {
    await plan.dispose();
  }
};
