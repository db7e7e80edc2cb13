import { pollFor } from "../../../test-support/wait.js";
import type { FakeTelegram } from "../../fakes/telegram/index.js";
import { auditReplies, type MessageVerdict } from "./reply-audit.js";
import type { SentMessage } from "./traffic.js";

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
