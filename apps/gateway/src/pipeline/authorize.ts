import { accessOf } from "../access-control/access.js";
import { describePairingRequest } from "../commands/approve.js";
import { sayAndFinish } from "./command-answer.js";
import type { MessageContext, Middleware } from "./types.js";

/** The one line an unknown user gets in a direct message. */
export const RefusalText =
  "⛔ You are not allowed to use this bot. Ask its operator to add your user id.";

/**
 * Step 1: only `allowedUsers` and `admins` (`<platform>:<id>`) get further, and with
 * `access: pairing` the users an admin approved (they are users, never admins). Unknown users
 * get no turn and no sandbox work; in a direct message they get one line ({@link RefusalText},
 * or in a pairing profile their one-time code), in groups and channels they are ignored
 * silently (no noise for the other members; groups never pair).
 */
export const authorize: Middleware = async (ctx, next) => {
  const { message, runtime } = ctx;
  // A config task's run is the operator's (docs/schedules.md): allowed, not an admin.
  const access =
    message.scheduled?.operator === true
      ? { allowed: true, admin: false }
      : accessOf(runtime.profile, message.platform, message.userId);
  const user = `${message.platform}:${message.userId}`;
  // A task's run whose owner may no longer use the bot is refused without a word: every run
  // would tell them again (docs/schedules.md); its record of runs says `refused`.
  const told = message.chatType === "dm" && message.scheduled === undefined;
  if (access.allowed) {
    ctx.access = access;
    return next();
  }
  if (runtime.profile.access === "pairing") {
    if (await runtime.store.isPaired(user)) {
      ctx.access = { allowed: true, admin: false, paired: true };
      return next();
    }
    if (told) {
      await sayAndFinish(ctx, await offerPairing(ctx, user), "refused");
      return;
    }
  }
  ctx.log.info(
    { user, chatType: message.chatType, taskId: message.scheduled?.taskId },
    "message from a user who is not allowed; ignored",
  );
  await sayAndFinish(ctx, told ? `${RefusalText} (${user})` : undefined, "refused");
};

/**
 * An unknown user's DM in a pairing profile: their code (a new one, or the one still pending),
 * or word that too many are waiting: the line to answer with. The message itself is dropped
 * (not run after approval).
 */
async function offerPairing(ctx: MessageContext, user: string): Promise<string> {
  const { message, runtime } = ctx;
  const { pairing } = runtime.profile;
  const result = await runtime.store.requestPairing(
    { user, userName: message.userName, chatId: message.chatId },
    { codeTtlMs: pairing.codeTtlSeconds * 1000, maxPending: pairing.maxPendingCodes },
  );
  // The code itself is not logged: `mediagate pairing list` shows it to the operator. A
  // refusal is counted, and logged with the others in one summary line per period.
  if (result.status === "full") runtime.pairingRefusals.count(user);
  else ctx.log.info({ user, pairing: result.status }, "unknown user in a DM: pairing code");
  return describePairingRequest(result, user, runtime.store.now());
}
