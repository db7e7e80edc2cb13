import { SlotRegistry } from "../runtime/slot-registry.js";
import { type Middleware, say, sessionOf } from "./types.js";

/** What the chat gets when a finished turn's reply cannot be planned or delivered. */
export const DeliveryFailedText = "⚠️ The reply could not be delivered.";

/**
 * Step 4: queues the rest of the pipeline as the session's next turn (one at a time per
 * session, global cap across sessions). When the turn starts, the session id is read again
 * (a /reset may have rotated it while the message waited) and the context is bound anew: the
 * job runs from whatever turn finished before it, so the identity must not be inherited.
 */
export const enqueueTurn: Middleware = async (ctx, next) => {
  const queued = sessionOf(ctx);
  const { queue, scope, slots } = ctx.services;
  if (queue.closed) {
    ctx.log.info("gateway is stopping; message not queued");
    return;
  }
  const outcome = await queue.enqueue(queued.sessionKey, async (signal) => {
    const session = {
      ...queued,
      sessionId: await ctx.runtime.store.currentSessionId(queued.sessionKey),
    };
    const slot = ctx.runtime.slotFor(session.sessionKey);
    ctx.session = session;
    ctx.slot = slot;
    ctx.signal = signal;
    slots.note(SlotRegistry.slotId(session.profile, slot), session.sessionKey);
    return scope.run(session, async () => {
      try {
        await next();
      } catch (error) {
        // The agent step handles its own failures; this is planning or delivery failing.
        ctx.log.error({ err: error }, "reply could not be planned or delivered");
        await say(ctx, DeliveryFailedText);
      }
    });
  });
  if (outcome === "dropped") ctx.log.info("queued message dropped by /stop or /reset");
};
