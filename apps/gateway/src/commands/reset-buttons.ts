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
 * else is told privately). The questions live in this process: after a restart, or past
 * `Defaults.approvals.expiresSeconds`, a press is answered that the button does nothing.
 * Confirm answers at once (Discord gives an interaction 3 s) and the reset's outcome follows
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
      return { kind: "refused", notice: UnknownChoiceText };
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

  async #reset(runtime: PipelineRuntime, waiting: Waiting): Promise<void> {
    const services = this.options.services();
    try {
      const result = await resetSession(runtime, services, waiting.sessionKey, true);
      if (result.status === "done") {
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
