import { finishEntry } from "./journal-steps.js";
import { type Middleware, sessionOf } from "./types.js";

/**
 * Step 6: the finished turn's reply goes to the outbox (recorded, and the message's journal
 * entry closed, in one transaction) and is delivered from there: media planned from the turn's
 * slot, the text and files sent with each step recorded, notices for files that did not
 * arrive (docs/durability.md). The session's next turn waits for this attempt; a reply held
 * back by a long `retry_after` is retried later outside the session's turn. A reply with no
 * text and no `MEDIA:` tag sends nothing.
 */
export const sendReply: Middleware = async (ctx, next) => {
  const session = sessionOf(ctx);
  const text = ctx.reply ?? "";
  if (text.trim() === "") {
    await finishEntry(ctx, "silent");
    await next();
    return;
  }
  const { outbox } = ctx.services;
  const record = await outbox.record(
    {
      profile: session.profile,
      platform: ctx.message.platform,
      sessionKey: session.sessionKey,
      slot: ctx.slot ?? ctx.runtime.slotFor(session.sessionKey),
      target: ctx.target,
      text,
    },
    ctx.entryId,
  );
  const result = await outbox.deliver(record);
  ctx.log.info({ replyId: record.id, result }, "reply delivery attempt ended");
  await next();
};
