import { accessOf } from "../runtime/access.js";
import { finishEntry } from "./journal-steps.js";
import { type Middleware, say } from "./types.js";

/** The one line an unknown user gets in a direct message. */
export const RefusalText =
  "⛔ You are not allowed to use this bot. Ask its operator to add your user id.";

/**
 * Step 1: only `allowedUsers` and `admins` (`<platform>:<id>`) get further. Unknown users get no
 * turn and no sandbox work; in a direct message they get one line ({@link RefusalText}), in
 * groups and channels they are ignored silently (no noise for the other members).
 */
export const authorize: Middleware = async (ctx, next) => {
  const { message } = ctx;
  const access = accessOf(ctx.runtime.profile, message.platform, message.userId);
  if (!access.allowed) {
    ctx.log.info(
      { user: `${message.platform}:${message.userId}`, chatType: message.chatType },
      "message from a user who is not allowed; ignored",
    );
    if (message.chatType === "dm")
      await say(ctx, `${RefusalText} (${message.platform}:${message.userId})`);
    await finishEntry(ctx, "refused");
    return;
  }
  ctx.access = access;
  await next();
};
