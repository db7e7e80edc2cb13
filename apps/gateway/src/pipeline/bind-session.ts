import { lazyChild } from "../log.js";
import { buildSessionKey } from "../session/key.js";
import type { Middleware } from "./types.js";

/**
 * Step 2: builds the session key (docs/sessions.md), looks up the session id, resolves the slot and
 * binds the session context to the message's pipeline context for the rest of the pipeline.
 */
export const bindSession: Middleware = async (ctx, next) => {
  const { message, runtime } = ctx;
  const profile = runtime.profile.name;
  const sessionKey = buildSessionKey({ ...message, profile }, runtime.profile);
  const readAt = runtime.store.rotations;
  const session = {
    profile,
    platform: message.platform,
    chatId: message.chatId,
    chatType: message.chatType,
    chatName: message.chatName,
    threadId: message.threadId,
    userId: message.userId,
    userName: message.userName,
    messageId: message.messageId,
    sessionKey,
    sessionId: await runtime.store.currentSessionId(sessionKey),
  };
  ctx.session = session;
  ctx.sessionReadAt = readAt;
  ctx.slot = runtime.slotFor(sessionKey);
  ctx.services.live?.seen(session, ctx.slot);
  ctx.log = lazyChild(ctx.log, { sessionKey, messageId: message.messageId });
  return next();
};
