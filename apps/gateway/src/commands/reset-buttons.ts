import { accessOf } from "../access-control/access.js";
import type { ChannelAdapter, ChatTarget, InboundMessage } from "../channels/types.js";
import { choiceId, formatChoiceData } from "../choices/choice-data.js";
import { type ChoiceHandler, UnknownChoiceText } from "../choices/router.js";
import { Defaults } from "../defaults.js";
import type { Logger } from "../log.js";
import type { PipelineRuntime, PipelineServices } from "../pipeline/types.js";
import { resetSession } from "./reset.js";

/** The button kind of /reset confirmations in choice data (`rs:<id>:ok|no`). */
export const ResetChoiceKind = "rs";

/** The most /reset questions kept waiting; the oldest is forgotten first. */
const MaxWaiting = 100;

/** What a question still waiting when the gateway stops is edited to (its buttons removed). */
export const ResetRestartedText =
  "⚠️ Not reset: the gateway restarted before anyone answered, so this question no longer counts. Send /reset again if you still want it.";

/**
 * What a press on a question this process does not know is told: one answered, expired or
 * forgotten (the oldest of more than `MaxWaiting`), or asked before a crash.
 */
export const ResetGoneText =
  "This /reset question is no longer open (it was answered, it expired, or the gateway restarted since); nothing was reset. Send /reset again if you still want it.";

interface Waiting {
  readonly profile: string;
  readonly sessionKey: string;
  readonly channel: ChannelAdapter;
  readonly target: ChatTarget;
  readonly messageId: string;
  readonly expiresMs: number;
}

/** What {@link ResetConfirmations} needs of the gateway. */
export interface ResetConfirmationsOptions {
  readonly runtimeOf: (profile: string) => PipelineRuntime | undefined;
  readonly services: () => PipelineServices;
  readonly now: () => number;
  readonly logger: Logger;
}

/**
 * `/reset` on a shared slot asks with Confirm / Cancel buttons (docs/approvals.md, "Buttons
 * elsewhere"); `/reset confirm` typed keeps working. Only an admin's press counts (anyone
 * else is told privately). The questions live in this process: a graceful stop closes those
 * still waiting ({@link closeAll}: the message says to send /reset again); after a crash, or
 * past `Defaults.approvals.expiresSeconds`, a press is told the question is no longer open.
 * Nothing is ever reset without an admin's press in this process. Confirm answers at once (Discord gives an interaction 3 s) and the reset's outcome follows
 * as a message.
 */
export class ResetConfirmations {
  readonly #waiting = new Map<string, Waiting>();

  constructor(private readonly options: ResetConfirmationsOptions) {}

  /** Posts `question` with the buttons; false when the channel has none or the post failed. */
  async ask(
    channel: ChannelAdapter,
    target: ChatTarget,
    message: InboundMessage,
    sessionKey: string,
    question: string,
  ): Promise<boolean> {
    const choices = channel.choices;
    if (choices === undefined) return false;
    const id = choiceId();
    const data = (option: string) => formatChoiceData({ kind: ResetChoiceKind, id, option });
    try {
      const messageId = await choices.post(
        target,
        question,
        [
          [
            { label: "Confirm", data: data("ok"), style: "danger" },
            { label: "Cancel", data: data("no"), style: "secondary" },
          ],
        ],
        AbortSignal.timeout(Defaults.progress.requestTimeoutMs),
      );
      if (this.#waiting.size >= MaxWaiting) {
        const oldest = this.#waiting.keys().next().value;
        if (oldest !== undefined) this.#waiting.delete(oldest);
      }
      this.#waiting.set(id, {
        profile: message.profile,
        sessionKey,
        channel,
        target,
        messageId,
        expiresMs: this.options.now() + Defaults.approvals.expiresSeconds * 1000,
      });
      return true;
    } catch (error) {
      this.options.logger.warn({ err: error }, "could not post the /reset question with buttons");
      return false;
    }
  }

  /** The choice router's handler of {@link ResetChoiceKind} presses. */
  readonly onPress: ChoiceHandler = async (press, data) => {
    const waiting = this.#waiting.get(data.id);
    const runtime = waiting === undefined ? undefined : this.options.runtimeOf(waiting.profile);
    if (
      waiting === undefined ||
      runtime === undefined ||
      waiting.profile !== press.profile ||
      waiting.target.platform !== press.platform ||
      waiting.target.chatId !== press.chatId ||
      waiting.messageId !== press.messageId ||
      (data.option !== "ok" && data.option !== "no")
    ) {
      return { kind: "refused", notice: waiting === undefined ? ResetGoneText : UnknownChoiceText };
    }
    if (!accessOf(runtime.profile, press.platform, press.userId).admin) {
      return { kind: "refused", notice: "⛔ /reset is for admins only; nothing was done." };
    }
    this.#waiting.delete(data.id);
    const by = press.userName ?? `${press.platform}:${press.userId}`;
    if (this.options.now() > waiting.expiresMs) {
      return { kind: "decided", text: "⌛ This /reset question expired; send /reset again." };
    }
    if (data.option === "no") {
      return { kind: "decided", text: `Reset cancelled by ${by}; nothing was done.` };
    }
    runtime.log.info({ sessionKey: waiting.sessionKey, by }, "/reset confirmed with a button");
    void this.#reset(runtime, waiting);
    return { kind: "decided", text: `♻️ Reset confirmed by ${by}; resetting…` };
  };

  /**
   * The gateway stops: every question still waiting (not expired) is closed with {@link ResetRestartedText}
   * (its buttons removed), each edit bounded by `Defaults.progress.requestTimeoutMs`; one that
   * fails is logged (a later press is told the question is no longer open). Never rejects.
   */
  async closeAll(): Promise<void> {
    const now = this.options.now();
    // An expired question is left as it is: a press on it is told it is no longer open.
    const waiting = [...this.#waiting.values()].filter((question) => now <= question.expiresMs);
    this.#waiting.clear();
    await Promise.all(
      waiting.map(async (question) => {
        try {
          await question.channel.choices?.close(
            question.target,
            question.messageId,
            ResetRestartedText,
            AbortSignal.timeout(Defaults.progress.requestTimeoutMs),
          );
        } catch (error) {
          this.options.logger.warn(
            { err: error, sessionKey: question.sessionKey },
            "could not close a /reset question at the stop",
          );
        }
      }),
    );
    if (waiting.length > 0)
      this.options.logger.info({ closed: waiting.length }, "/reset questions closed at the stop");
  }

  async #reset(runtime: PipelineRuntime, waiting: Waiting): Promise<void> {
    const services = this.options.services();
    try {
      const result = await resetSession(runtime, services, waiting.sessionKey, true);
      if (result.status === "done") {
        // With replicas, the replica holding the session stops its turn there (docs/cluster.md).
        await services.sessions
          ?.askHolder({ profile: runtime.profile.name, sessionKey: waiting.sessionKey })
          .catch(() => undefined);
        await waiting.channel.sendText(waiting.target, result.text, services.outbox.signal);
      }
    } catch (error) {
      runtime.log.error(
        { err: error, sessionKey: waiting.sessionKey },
        "/reset from a button failed",
      );
    }
  }
}
