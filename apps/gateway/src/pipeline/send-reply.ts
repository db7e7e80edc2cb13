import { finishEntry } from "./journal-steps.js";
import { endAborted } from "./run-turn.js";
import { type Middleware, sessionOf } from "./types.js";

/**
 * Step 6: the finished turn's reply goes to the outbox (recorded, and the message's journal
 * entry closed, in one transaction) and is delivered from there: media planned from the turn's
 * slot (the plan recorded before the first send), the text and files sent with each step
 * recorded, notices for files that did not arrive (docs/durability.md). A turn aborted since
 * its agent answered sends nothing. The session's next turn waits for this attempt, but once
 * the reply goes to the outbox a message arriving meanwhile is not told it is queued, nor
 * interrupts, and /stop no longer aborts the turn (`TurnQueue#replied`); a reply held back by
 * a long `retry_after` is retried later outside the session's turn. A reply with no text and
 * no `MEDIA:` tag sends nothing.
 *
 * The attempt's result and each part's outcome go into the turn's report; a debug line tells
 * the text reply's size and outcome (its text only at `trace`).
 */
export const sendReply: Middleware = async (ctx, next) => {
  const session = sessionOf(ctx);
  // Aborted since the agent answered (/stop while its notices were sent): no reply. From here
  // on the reply is on its way and the turn is answered (`TurnQueue#replied`, with nothing
  // awaited in between): /stop no longer aborts it (`TurnQueue#abortAnswering`) nor says so.
  if (ctx.signal?.aborted === true) {
    await endAborted(ctx, ctx.signal);
    return;
  }
  ctx.services.queue.replied(session.sessionKey);
  const text = ctx.reply ?? "";
  if (text.trim() === "") {
    ctx.log.debug("empty reply; nothing sent");
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
    ctx.mergedEntryIds,
  );
  const { result, deliveries } = await outbox.deliver(record);
  if (ctx.turn !== undefined) {
    ctx.turn.delivery = result;
    ctx.turn.deliveries = deliveries;
  }
  const textOutcome = deliveries.find((d) => d.kind === "text")?.outcome;
  ctx.log.debug(
    { replyId: record.id, chars: text.length, textOutcome, result },
    "text reply delivery attempt ended",
  );
  ctx.log.trace({ replyId: record.id, text }, "reply text");
  await next();
};
