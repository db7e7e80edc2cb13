import type { ChatTarget } from "../types.js";

/** Per-message options every send carries: the topic, and the reply reference. */
export interface SendOptions {
  message_thread_id?: number;
  reply_parameters?: { message_id: number; allow_sending_without_reply: boolean };
}

const Integer = /^-?\d+$/;

/**
 * Where one reply goes: the same chat and forum topic (`message_thread_id`) it came from.
 * Only the first message that gets through replies to the user's message; the rest follow
 * it. `allow_sending_without_reply` keeps a deleted original from failing the whole reply.
 */
export class OutgoingTarget {
  /** Numeric ids go as numbers; `@channelusername` stays a string. */
  readonly chat: number | string;
  readonly chatId: string;
  private readonly threadId: number | undefined;
  private replyTo: number | undefined;

  constructor(target: ChatTarget) {
    this.chatId = target.chatId;
    this.chat = Integer.test(target.chatId) ? Number(target.chatId) : target.chatId;
    this.threadId =
      target.threadId !== undefined && Integer.test(target.threadId)
        ? Number(target.threadId)
        : undefined;
    this.replyTo =
      target.replyToMessageId !== undefined && Integer.test(target.replyToMessageId)
        ? Number(target.replyToMessageId)
        : undefined;
  }

  /** Options for the next message (the same for every retry of it). */
  options(): SendOptions {
    const options: SendOptions = {};
    if (this.threadId !== undefined) options.message_thread_id = this.threadId;
    if (this.replyTo !== undefined) {
      options.reply_parameters = { message_id: this.replyTo, allow_sending_without_reply: true };
    }
    return options;
  }

  /** A message got through: later ones no longer reply. */
  sent(): void {
    this.replyTo = undefined;
  }

  /** Options for chat actions (typing): the topic only. */
  actionOptions(): { message_thread_id?: number } {
    return this.threadId === undefined ? {} : { message_thread_id: this.threadId };
  }
}
