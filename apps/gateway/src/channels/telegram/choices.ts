import type { Api } from "grammy";
import type { CallbackQuery, InlineKeyboardMarkup } from "grammy/types";
import type { Logger } from "pino";
import { UnknownChoiceText } from "../../choices/router.js";
import { Defaults } from "../../defaults.js";
import type {
  ChatTarget,
  ChoiceAnswer,
  ChoiceButton,
  ChoiceButtons,
  ChoicePress,
} from "../types.js";
import { failureFacts } from "./errors.js";
import { grammySignal } from "./send-media.js";
import { OutgoingTarget } from "./target.js";

/** What a press is told when nobody handles presses (or the button's message is gone). */

/**
 * Choice buttons on Telegram (docs/approvals.md, "Buttons"): `sendMessage` with an inline
 * keyboard, closed with `editMessageText` and an empty keyboard (with `editMessageReplyMarkup`
 * when the text cannot be edited, so no button outlives its choice). Plain text, one try per
 * call with the caller's signal; failures reject with the grammY error.
 */
export class TelegramChoiceButtons implements ChoiceButtons {
  constructor(
    private readonly api: Api,
    private readonly token: string,
    private readonly logger: Logger,
  ) {}

  async post(
    target: ChatTarget,
    text: string,
    rows: readonly (readonly ChoiceButton[])[],
    signal: AbortSignal,
  ): Promise<string> {
    const out = new OutgoingTarget(target);
    const sent = await this.api.sendMessage(
      out.chat,
      text,
      { ...out.options(), reply_markup: keyboardOf(rows) },
      grammySignal(signal),
    );
    return String(sent.message_id);
  }

  async close(
    target: ChatTarget,
    messageId: string,
    text: string,
    signal: AbortSignal,
  ): Promise<void> {
    const out = new OutgoingTarget(target);
    try {
      await this.api.editMessageText(
        out.chat,
        Number(messageId),
        text,
        { reply_markup: { inline_keyboard: [] } },
        grammySignal(signal),
      );
    } catch (error) {
      this.logger.warn(
        { chatId: out.chatId, ...failureFacts(error, this.token) },
        "could not edit a choice message; removing its buttons only",
      );
      await this.api.editMessageReplyMarkup(
        out.chat,
        Number(messageId),
        { reply_markup: { inline_keyboard: [] } },
        grammySignal(signal),
      );
    }
  }

  /**
   * Answers one `callback_query`: the handler's notice through `answerCallbackQuery` (which
   * also ends the client's spinner), then, for a decision, the message edited to its new text
   * without buttons. A query whose message is gone or that carries no data is answered
   * "does nothing". Never throws: a press answered late (after a restart, Telegram forgets
   * queries) is logged.
   */
  async answer(
    query: CallbackQuery,
    profile: string,
    handler: ((press: ChoicePress) => Promise<ChoiceAnswer>) | undefined,
  ): Promise<void> {
    const message = query.message;
    let answer: ChoiceAnswer = { kind: "refused", notice: UnknownChoiceText };
    let target: ChatTarget | undefined;
    if (
      message !== undefined &&
      message.date !== 0 &&
      query.data !== undefined &&
      handler !== undefined
    ) {
      const threadId =
        "is_topic_message" in message && message.is_topic_message === true
          ? String(message.message_thread_id)
          : undefined;
      target = { platform: "telegram", chatId: String(message.chat.id), threadId };
      const user = query.from;
      answer = await handler({
        profile,
        platform: "telegram",
        chatId: String(message.chat.id),
        threadId,
        messageId: String(message.message_id),
        userId: String(user.id),
        userName:
          user.username !== undefined
            ? `@${user.username}`
            : [user.first_name, user.last_name].filter(Boolean).join(" "),
        data: query.data,
      });
    }
    const signal = () => grammySignal(AbortSignal.timeout(Defaults.progress.requestTimeoutMs));
    const notice = answer.notice;
    try {
      await this.api.answerCallbackQuery(
        query.id,
        notice === undefined ? {} : { text: notice.slice(0, 200) },
        signal(),
      );
    } catch (error) {
      this.logger.info({ ...failureFacts(error, this.token) }, "could not answer a button press");
    }
    if (answer.kind === "decided" && target !== undefined && message !== undefined) {
      await this.close(
        target,
        String(message.message_id),
        answer.text,
        AbortSignal.timeout(Defaults.progress.requestTimeoutMs),
      ).catch((error: unknown) =>
        this.logger.warn(
          { ...failureFacts(error, this.token) },
          "could not close a choice message",
        ),
      );
    }
  }
}

function keyboardOf(rows: readonly (readonly ChoiceButton[])[]): InlineKeyboardMarkup {
  return {
    inline_keyboard: rows.map((row) =>
      row.map((button) => ({ text: button.label, callback_data: button.data })),
    ),
  };
}
