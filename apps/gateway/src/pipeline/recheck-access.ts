import { sayAndFinish } from "./command-answer.js";
import type { Middleware } from "./types.js";

/** What a user whose pairing was revoked while their message waited is told, in a DM. */
export const RevokedWhileQueuedText =
  "⛔ This message was not run: your access to this bot was revoked while it waited.";

/**
 * Step after `enqueueTurn`, when the turn starts: a user let in by a pairing approval
 * ({@link Access.paired}) is asked for again, since `mediagate pairing revoke` may have taken it
 * back while the message waited in its session's queue (docs/security.md, "Pairing"). A
 * revoked user's message does not run: it is closed as `refused`, with
 * {@link RevokedWhileQueuedText} in a DM and without a word elsewhere, as `authorize` refuses.
 * A turn that collected several messages (`busyMode: collect`) is not checked again: it runs
 * whole, so no other member's message is dropped with a revoked one's.
 * Users the config lets in cannot lose it while the gateway runs: the config is read at start,
 * and a message the next start takes over from the journal goes through `authorize` again.
 */
export const recheckAccess: Middleware = async (ctx, next) => {
  const { message, runtime } = ctx;
  if (ctx.access?.paired !== true) return next();
  // A turn that collected other messages (`busyMode: collect`, a shared session; merged here
  // or by the recovery) runs whole: refusing it would drop the others' messages with it,
  // without a word in a group.
  if (ctx.mergedEntryIds !== undefined) return next();
  const user = `${message.platform}:${message.userId}`;
  if (await runtime.store.isPaired(user)) return next();
  if (ctx.turn !== undefined) ctx.turn.exit = "refused";
  ctx.log.info({ user }, "pairing revoked while the message waited; not run");
  const told = message.chatType === "dm" && message.scheduled === undefined;
  await sayAndFinish(ctx, told ? RevokedWhileQueuedText : undefined, "refused");
};
