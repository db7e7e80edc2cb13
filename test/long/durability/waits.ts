import type { FakeTelegram } from "../../fakes/telegram/index.js";
import { auditReplies, type MessageVerdict } from "./reply-audit.js";
import type { SentMessage } from "./traffic.js";

/**
 * Polls every 100 ms until `check` gives a value other than `undefined`, or `timeoutMs` passed
 * (then `undefined`): the caller decides what a missing event means, with its figures.
 */
export async function pollFor<T>(
  check: () => T | undefined | Promise<T | undefined>,
  timeoutMs: number,
): Promise<T | undefined> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Polls until `message` has a reply (or a duplicate); `undefined` after `timeoutMs`. */
export function answerOf(
  fake: FakeTelegram,
  message: SentMessage,
  timeoutMs: number,
): Promise<MessageVerdict | undefined> {
  return pollFor(() => {
    const verdict = auditReplies(fake.calls, [message]).verdicts[0];
    return verdict !== undefined && verdict.replies.length > 0 ? verdict : undefined;
  }, timeoutMs);
}
