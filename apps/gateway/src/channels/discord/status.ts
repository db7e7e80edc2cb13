import { escapeMarkdown, type REST, Routes } from "discord.js";
import {
  type ChatTarget,
  StatusCallError,
  type StatusMessages,
  type StatusTextOptions,
} from "../types.js";
import { classifyFailure, describeError } from "./errors.js";
import { createMessageAttempt, newNonce } from "./message-create.js";
import { DiscordTextLimit } from "./outbox.js";

/** Discord lets a bot edit about five messages per five seconds in a channel. */
const EditIntervalMs = 1000;

/**
 * A turn's status message on Discord (docs/sessions.md, "Live progress"): a message create
 * (with a nonce, replying to the user's message, mentions off), then `PATCH` and `DELETE` of
 * it, through the delivery REST instance (no retries of its own, rate limits thrown). The text
 * is escaped so a command's `*` or `_` shows as typed; a streamed reply's preview (`verbatim`)
 * is not, it is Markdown already (docs/streaming.md). One try per call, except that a post
 * whose answer was lost (a 5xx, a dropped connection) is made once more at once with its
 * nonce, so a message Discord made is never left unknown; a failure is a
 * {@link StatusCallError} (a 429 carries Discord's wait).
 */
export class DiscordStatusMessages implements StatusMessages {
  /** Split as the final reply is (channels/discord/deliver-reply.ts), so previews match it. */
  readonly textLimit: StatusMessages["textLimit"];

  /** @param maxChunks the channel's `delivery.maxTextChunks`. */
  constructor(
    private readonly rest: REST,
    maxChunks: number,
  ) {
    this.textLimit = { maxLength: DiscordTextLimit, maxChunks };
  }

  editIntervalMs(_target: ChatTarget): number {
    return EditIntervalMs;
  }

  async post(
    target: ChatTarget,
    text: string,
    signal: AbortSignal,
    options?: StatusTextOptions,
  ): Promise<string> {
    const draft = { content: shown(text, options), replyTo: target.replyToMessageId };
    const nonce = newNonce();
    const attempt = () => createMessageAttempt(this.rest, channelOf(target), draft, nonce, signal);
    const created = await this.#call("post", async () => {
      try {
        return await attempt();
      } catch (error) {
        // A 5xx or a dropped connection may come after Discord made the message: one that
        // lost its answer would stay in the chat, its id unknown, never deleted. The same
        // nonce again answers that message (or makes it now): never a second one.
        if (signal.aborted || !answerLost(error)) throw error;
        return attempt();
      }
    });
    return created.id;
  }

  async edit(
    target: ChatTarget,
    messageId: string,
    text: string,
    signal: AbortSignal,
    options?: StatusTextOptions,
  ): Promise<void> {
    await this.#call("edit", () =>
      this.rest.patch(Routes.channelMessage(channelOf(target), messageId), {
        body: { content: shown(text, options), allowed_mentions: { parse: [] } },
        signal,
      }),
    );
  }

  async remove(target: ChatTarget, messageId: string, signal: AbortSignal): Promise<void> {
    await this.#call("remove", () =>
      this.rest.delete(Routes.channelMessage(channelOf(target), messageId), { signal }),
    );
  }

  async #call<T>(operation: StatusCallError["operation"], request: () => Promise<T>): Promise<T> {
    try {
      return await request();
    } catch (error) {
      const failure = classifyFailure(error);
      const summary = describeError(error);
      const description =
        typeof summary.message === "string" ? summary.message : String(summary.name ?? "error");
      if (failure?.kind === "rate_limited") {
        throw new StatusCallError(operation, 429, description, failure.retryAfterMs);
      }
      const status =
        failure?.kind === "rejected" || failure?.kind === "server_error"
          ? failure.status
          : undefined;
      throw new StatusCallError(operation, status, description);
    }
  }
}

/** Messages in a thread go to the thread's channel id; otherwise to the chat. */
function channelOf(target: ChatTarget): string {
  return target.threadId ?? target.chatId;
}

function shown(text: string, options: StatusTextOptions | undefined): string {
  return options?.verbatim === true ? text : escapeMarkdown(text);
}

/** Whether a failed create may have made the message: a 5xx or a transport failure. */
function answerLost(error: unknown): boolean {
  const kind = classifyFailure(error)?.kind;
  return kind === "server_error" || kind === "network";
}
