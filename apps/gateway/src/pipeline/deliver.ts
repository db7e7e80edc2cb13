import type { OutboundReply } from "../channels/types.js";
import { type Middleware, sessionOf } from "./types.js";

/**
 * Step 7: hands the finished turn to its channel. The reply carries the session key and profile
 * explicitly, so delivery never depends on the ambient session context (docs/sessions.md). A reply with
 * no text and no file is not sent.
 */
export const deliver: Middleware = async (ctx, next) => {
  const session = sessionOf(ctx);
  const plan = ctx.plan;
  if (plan === undefined) throw new Error("deliver: no media plan (planReplyMedia must run first)");
  if (plan.text.trim() === "" && plan.ready().length === 0) {
    await next();
    return;
  }
  const reply: OutboundReply = {
    sessionKey: session.sessionKey,
    profile: session.profile,
    target: ctx.target,
    text: plan.text,
    plan,
  };
  ctx.report = await ctx.channel.deliver(reply);
  for (const outcome of ctx.report.outcomes)
    ctx.log.info({ delivery: outcome }, `media ${outcome.status}`);
  await next();
};
