import { backoffMs, retry, type Sleep, stopController } from "@mediagate/io";
import type { Logger } from "pino";
import { Defaults } from "../../defaults.js";
import type { InboundHandler, InboundMessage } from "../types.js";
import { describeError } from "./errors.js";

/** Backoff of a message whose handler rejected (the journal could not be written). */
export interface InboundRetryOptions {
  /** First wait; doubles per failure. Default: `Defaults.discord.inboundRetry.minDelayMs`. */
  readonly minDelayMs?: number | undefined;
  /** Cap of that wait. Default: `Defaults.discord.inboundRetry.maxDelayMs`. */
  readonly maxDelayMs?: number | undefined;
}

interface ResolvedInboundRetry {
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

export const InboundRetryDefaults = Defaults.discord.inboundRetry satisfies ResolvedInboundRetry;

interface Item {
  readonly message: InboundMessage;
  readonly handler: InboundHandler;
  /** Resolves `true` once the handler accepted it, `false` when the queue stopped first. */
  readonly settled: Promise<boolean>;
  readonly settle: (accepted: boolean) => void;
}

interface Chat {
  /** Waiting, oldest message id first. */
  readonly waiting: Item[];
  current: Item | undefined;
  /** While above 0 the worker takes nothing new (a catch-up is fetching this chat). */
  holds: number;
}

/**
 * Hands Discord messages to their handler one chat at a time, in message-id order (snowflakes
 * grow with time, so that is the order they were sent in). When a handler rejects (the journal
 * is not writable) the same message is offered again after a backoff and the messages behind it
 * in that chat wait; other chats go on. The first failure of a message is logged at error level,
 * later ones at debug. Nothing is confirmed to Discord either way (Discord has no
 * acknowledgement): a message still waiting when the queue stops is left to the next start's
 * catch-up.
 */
export class InboundQueues {
  readonly #chats = new Map<string, Chat>();
  readonly #stop = stopController();
  readonly #retry: ResolvedInboundRetry;
  /** While above 0 no chat takes anything new (a catch-up is reading its cursors). */
  #holdsAll = 0;

  constructor(
    private readonly log: Logger,
    private readonly sleep: Sleep,
    retry: InboundRetryOptions = {},
  ) {
    this.#retry = {
      minDelayMs: retry.minDelayMs ?? InboundRetryDefaults.minDelayMs,
      maxDelayMs: retry.maxDelayMs ?? InboundRetryDefaults.maxDelayMs,
    };
    for (const [key, value] of Object.entries(this.#retry)) {
      if (!Number.isFinite(value) || value < 0) {
        throw new RangeError(`DiscordChannel inboundRetry.${key} must be >= 0, got ${value}`);
      }
    }
  }

  /**
   * Queues a message of chat `chatKey` in id order. A message already waiting or in flight is
   * not queued twice (its first copy's result is returned).
   */
  push(chatKey: string, message: InboundMessage, handler: InboundHandler): Promise<boolean> {
    if (this.#stop.signal.aborted) return Promise.resolve(false);
    const chat = this.#chat(chatKey);
    const same = [chat.current, ...chat.waiting].find(
      (item) => item?.message.messageId === message.messageId,
    );
    if (same) return same.settled;
    let settle: (accepted: boolean) => void = () => {};
    const settled = new Promise<boolean>((resolve) => {
      settle = resolve;
    });
    const item = { message, handler, settled, settle };
    const index = chat.waiting.findIndex(
      (waiting) => compareSnowflakes(waiting.message.messageId, message.messageId) > 0,
    );
    if (index < 0) chat.waiting.push(item);
    else chat.waiting.splice(index, 0, item);
    void this.#run(chatKey, chat);
    return settled;
  }

  /**
   * Holds a chat: the message in flight finishes, nothing new starts until the returned
   * function is called. Lets a catch-up put older messages ahead of live ones.
   */
  hold(chatKey: string): () => void {
    const chat = this.#chat(chatKey);
    chat.holds += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      chat.holds -= 1;
      void this.#run(chatKey, chat);
    };
  }

  /**
   * Holds every chat, those not seen yet too, until the returned function is called: lets a
   * catch-up learn which chats it fetches before any message arriving now is handed over.
   */
  holdAll(): () => void {
    this.#holdsAll += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#holdsAll -= 1;
      for (const [chatKey, chat] of this.#chats) void this.#run(chatKey, chat);
    };
  }

  /** The wait before offering a message again after its `failures`-th failure (from 1). */
  retryDelayMs(failures: number): number {
    return backoffMs(failures, { baseMs: this.#retry.minDelayMs, maxMs: this.#retry.maxDelayMs });
  }

  /**
   * Stops retrying; waiting messages are dropped (resolved `false`). Returns how many messages
   * were waiting or in flight (one in flight may still be accepted by its handler).
   */
  stop(): number {
    this.#stop.abort();
    let dropped = 0;
    for (const chat of this.#chats.values()) {
      if (chat.current !== undefined) dropped += 1;
      for (const item of chat.waiting.splice(0)) {
        item.settle(false);
        dropped += 1;
      }
    }
    return dropped;
  }

  #chat(chatKey: string): Chat {
    let chat = this.#chats.get(chatKey);
    if (!chat) {
      chat = { waiting: [], current: undefined, holds: 0 };
      this.#chats.set(chatKey, chat);
    }
    return chat;
  }

  async #run(chatKey: string, chat: Chat): Promise<void> {
    if (chat.current !== undefined) return;
    while (chat.holds === 0 && this.#holdsAll === 0 && !this.#stop.signal.aborted) {
      const item = chat.waiting.shift();
      if (item === undefined) break;
      chat.current = item;
      const accepted = await this.#handOver(item);
      chat.current = undefined;
      item.settle(accepted);
      if (!accepted) break;
    }
    if (chat.current === undefined && chat.holds === 0 && chat.waiting.length === 0) {
      this.#chats.delete(chatKey);
    }
  }

  /** Offers the message until its handler accepts it or the queue stops. */
  async #handOver(item: Item): Promise<boolean> {
    const { message } = item;
    const accepted = async (attempt: number) => {
      await item.handler(message);
      if (attempt > 1) {
        this.log.info(
          { chatId: message.chatId, messageId: message.messageId, failures: attempt - 1 },
          "discord message recorded after retrying",
        );
      }
    };
    try {
      await retry(accepted, {
        signal: this.#stop.signal,
        sleep: this.sleep,
        onFailure: ({ error, attempt: failures }) => {
          const delayMs = this.retryDelayMs(failures);
          const fields = {
            chatId: message.chatId,
            threadId: message.threadId,
            messageId: message.messageId,
            err: describeError(error),
            retryInMs: delayMs,
          };
          if (failures === 1) {
            this.log.error(
              fields,
              "discord message could not be recorded; retrying, later ones in this chat wait",
            );
          } else this.log.debug({ ...fields, failures }, "discord message still not recorded");
          return delayMs;
        },
      });
      return true;
    } catch {
      return false; // the loop only ends unaccepted when the queue stops
    }
  }
}

/** Orders snowflake ids (numeric strings without leading zeros) by value. */
export function compareSnowflakes(a: string, b: string): number {
  if (a.length !== b.length) return a.length - b.length;
  return a < b ? -1 : a > b ? 1 : 0;
}
