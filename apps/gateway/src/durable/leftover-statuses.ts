import { retry, type Sleep } from "@mediagate/io";
import { type Platform, StatusCallError, type StatusMessages } from "../channels/types.js";
import { Defaults } from "../defaults.js";
import type { Logger } from "../log.js";
import { StatusEndedText, statusCutOffText } from "./notices.js";
import type { Journal, LeftoverStatus } from "./types.js";

/** What {@link clearLeftoverStatuses} works with. */
export interface LeftoverStatusOptions {
  readonly journal: Journal;
  /** The status calls of a profile's channel on a platform (none: nothing to clear with). */
  readonly statusFor: (profile: string, platform: Platform) => StatusMessages | undefined;
  /** Whether a turn that had started runs again (`recovery.rerunInterrupted`). */
  readonly rerunInterrupted: boolean;
  readonly logger: Logger;
  /** Bound of one status call. Default `Defaults.progress.requestTimeoutMs`. */
  readonly requestTimeoutMs?: number | undefined;
  /** The wait a rate limit asks for (injected by tests). Default: a timer. */
  readonly sleep?: Sleep | undefined;
}

/** How one leftover status was left. */
type Cleared = "deleted" | "edited" | "failed";

/**
 * Clears the status messages that processes that are gone left showing (docs/durability.md):
 * one whose turn had ended (its entry `done`: the reply was recorded, or the turn finished)
 * is deleted as at a turn's end (marked ended when the platform refuses the delete); one whose
 * turn was cut off is edited to say so, and that it runs again when it does (a streamed
 * preview's first message is this status: the partial text gives way to the notice); the
 * preview's rollover messages are deleted either way (docs/streaming.md). All at once, each
 * call bounded and tried once, except that a rate limit (429) is waited out and the call made
 * again (the killed process's edits may have used the chat's budget: without the wait the
 * notice would be lost); then each is forgotten by the journal whatever the platform said: a
 * status is best effort. The gateway awaits this before it sends anything else to
 * their chats. Resolves with how each one ended; never rejects.
 */
export async function clearLeftoverStatuses(options: LeftoverStatusOptions): Promise<Cleared[]> {
  const log = options.logger.child({ component: "leftover-statuses" });
  const leftovers = await options.journal.leftoverStatuses().catch((error: unknown) => {
    log.error({ err: error }, "could not read the status messages a crash left");
    return [];
  });
  const results = await Promise.all(
    leftovers.map(async (leftover) => {
      const [result] = await Promise.all([
        clearOne(leftover, options),
        removePreviews(leftover, options),
      ]);
      return result;
    }),
  );
  for (const [index, leftover] of leftovers.entries()) {
    await options.journal.statusGone(leftover.entryId).catch((error: unknown) => {
      log.warn({ err: error, entryId: leftover.entryId }, "could not forget a leftover status");
    });
    log.info(
      { entryId: leftover.entryId, platform: leftover.platform, result: results[index] },
      "status message a crash left cleared",
    );
  }
  return results;
}

async function clearOne(
  leftover: LeftoverStatus,
  options: LeftoverStatusOptions,
): Promise<Cleared> {
  const status = options.statusFor(leftover.profile, leftover.platform);
  if (status === undefined) return "failed";
  const { target, messageId } = leftover;
  const call = (request: (signal: AbortSignal) => Promise<void>) => callPatiently(request, options);
  const warn = (what: string, error: unknown) =>
    options.logger.warn({ err: error, entryId: leftover.entryId }, what);
  let text: string;
  if (leftover.state === "done") {
    try {
      await call((signal) => status.remove(target, messageId, signal));
      return "deleted";
    } catch (error) {
      warn("could not delete a leftover status message; marking it ended", error);
    }
    text = StatusEndedText;
  } else {
    text = statusCutOffText(leftover.state === "received" || options.rerunInterrupted);
  }
  try {
    await call((signal) => status.edit(target, messageId, text, signal));
    return "edited";
  } catch (error) {
    warn("could not edit a leftover status message", error);
    return "failed";
  }
}

/** Deletes the rollover messages of a streamed preview; a failure is logged and left. */
async function removePreviews(
  leftover: LeftoverStatus,
  options: LeftoverStatusOptions,
): Promise<void> {
  const status = options.statusFor(leftover.profile, leftover.platform);
  if (status === undefined) return;
  await Promise.all(
    leftover.previews.map((messageId) =>
      callPatiently((signal) => status.remove(leftover.target, messageId, signal), options).catch(
        (error: unknown) =>
          options.logger.warn(
            { err: error, entryId: leftover.entryId },
            "could not delete a leftover preview message",
          ),
      ),
    ),
  );
}

/**
 * Makes one status call, bounded; a rate limit (429) is waited out, as long as the platform
 * asked (up to `Defaults.progress.leftoverMaxWaitMs`), and the call made again, at most
 * `Defaults.progress.leftoverAttempts` times in all. Any other failure is thrown at once.
 */
function callPatiently(
  request: (signal: AbortSignal) => Promise<void>,
  options: LeftoverStatusOptions,
): Promise<void> {
  const { leftoverAttempts, leftoverMaxWaitMs, requestTimeoutMs } = Defaults.progress;
  return retry(() => request(AbortSignal.timeout(options.requestTimeoutMs ?? requestTimeoutMs)), {
    maxAttempts: leftoverAttempts,
    sleep: options.sleep,
    onFailure: ({ error }) => {
      const waitMs = error instanceof StatusCallError ? error.retryAfterMs : undefined;
      if (waitMs === undefined || waitMs > leftoverMaxWaitMs) throw error;
      return waitMs;
    },
  });
}
