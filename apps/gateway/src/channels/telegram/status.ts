import { type Api, GrammyError } from "grammy";
import { Defaults } from "../../defaults.js";
import { utf16Length } from "../../delivery/split-text.js";
import { type ChatTarget, StatusCallError, type StatusMessages } from "../types.js";
import { failureFacts } from "./errors.js";
import { grammySignal } from "./send-media.js";
import { OutgoingTarget } from "./target.js";

/** Telegram's pace for one chat: about a message a second; 20 a minute in a group. */
const PrivateEditIntervalMs = 1000;
const GroupEditIntervalMs = Defaults.progress.telegramGroupEverySeconds * 1000;

/**
 * A turn's status message on Telegram (docs/sessions.md, "Live progress"): `sendMessage` in
 * the chat and topic, replying to the user's message, then `editMessageText` and
 * `deleteMessage`; a streamed reply's drafts with `sendMessageDraft` (docs/streaming.md). Plain
 * text. One try per call with the caller's signal; a failure is a
 * token-free {@link StatusCallError} (a 429 carries its `retry_after`). An edit Telegram
 * answers "message is not modified" is done: the message shows that text already.
 */
export class TelegramStatusMessages implements StatusMessages {
  /** Split as the final reply is (telegram/deliver-reply.ts), so previews match it. */
  readonly textLimit: StatusMessages["textLimit"];

  /** @param maxChunks the channel's `delivery.maxTextChunks`. */
  constructor(
    private readonly api: Api,
    private readonly token: string,
    maxChunks: number,
  ) {
    this.textLimit = { maxLength: 4096, measure: utf16Length, maxChunks };
  }

  /** Groups, supergroups and channels (negative ids) get one edit per 3 s, chats one per second. */
  editIntervalMs(target: ChatTarget): number {
    return target.chatId.startsWith("-") ? GroupEditIntervalMs : PrivateEditIntervalMs;
  }

  async post(target: ChatTarget, text: string, signal: AbortSignal): Promise<string> {
    const out = new OutgoingTarget(target);
    const sent = await this.#call("post", () =>
      this.api.sendMessage(out.chat, text, out.options(), grammySignal(signal)),
    );
    return String(sent.message_id);
  }

  async edit(
    target: ChatTarget,
    messageId: string,
    text: string,
    signal: AbortSignal,
  ): Promise<void> {
    const out = new OutgoingTarget(target);
    await this.#call("edit", async () => {
      try {
        await this.api.editMessageText(out.chat, Number(messageId), text, {}, grammySignal(signal));
      } catch (error) {
        if (!notModified(error)) throw error;
      }
    });
  }

  async draft(
    target: ChatTarget,
    draftId: number,
    text: string,
    signal: AbortSignal,
  ): Promise<void> {
    const out = new OutgoingTarget(target);
    const thread = out.options().message_thread_id;
    await this.#call("draft", () =>
      this.api.sendMessageDraft(
        Number(out.chat),
        draftId,
        text,
        thread === undefined ? {} : { message_thread_id: thread },
        grammySignal(signal),
      ),
    );
  }

  async remove(target: ChatTarget, messageId: string, signal: AbortSignal): Promise<void> {
    const out = new OutgoingTarget(target);
    await this.#call("remove", () =>
      this.api.deleteMessage(out.chat, Number(messageId), grammySignal(signal)),
    );
  }

  async #call<T>(operation: StatusCallError["operation"], request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      const facts = failureFacts(error, this.token);
      const retryAfterMs = facts.status === 429 ? (facts.retryAfterSeconds ?? 1) * 1000 : undefined;
      throw new StatusCallError(operation, facts.status, facts.description, retryAfterMs);
    }
  }
}

/**
 * Whether Telegram refused an edit as "message is not modified". It keeps a text without its
 * leading and trailing whitespace, so an edit that changes only those (a streamed reply grown
 * by a newline, or a message completed at a rollover by dropping its trailing one) gets that
 * answer: the message shows that text already, which is what the edit was for.
 */
function notModified(error: unknown): boolean {
  return (
    error instanceof GrammyError &&
    error.error_code === 400 &&
    /^Bad Request: message is not modified\b/.test(error.description)
  );
}
