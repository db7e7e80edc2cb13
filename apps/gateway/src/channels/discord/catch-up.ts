import { combinedSignal, type Sleep } from "@mediagate/io";
import { type Client, DiscordAPIError, type Message } from "discord.js";
import type { Logger } from "pino";
import { RateLimitedError, type RetryOptions, withRetry } from "../../delivery/retry.js";
import type { ChatCursor, InboundHandler, InboundMessage } from "../types.js";
import { describeError, discordRetryVerdict } from "./errors.js";
import { compareSnowflakes, type InboundQueues } from "./inbound-queue.js";

/** Discord's page size for `GET /channels/:id/messages`. */
const PageSize = 100;

/** What {@link fetchMissed} needs besides the client. */
interface FetchMissedOptions {
  /** At most this many messages are fetched (what is left of `catchUpMaxMessages`). */
  readonly maxMessages: number;
  readonly retry: RetryOptions | undefined;
  readonly log: Logger;
  /** The catch-up ends (the channel stops, or a newer session's catch-up took over): give up. */
  readonly signal: AbortSignal;
  /** Discord answered 401: the token was revoked. */
  readonly onUnauthorized: () => void;
}

/** What one fetch of a chat gave, and how it ended. */
interface Fetched {
  /** Oldest first. */
  readonly messages: Message[];
  /**
   * `complete`: nothing after them (or `maxMessages` fetched and nothing more, or the fetch was
   * aborted); `truncated`: `maxMessages` fetched and more were there (logged), they are not
   * answered; `skipped`: the chat cannot be fetched for good (gone, unreadable, a refusal; logged);
   * `failed`: a transient failure outlasted the retries, `error` says which.
   */
  readonly outcome: "complete" | "truncated" | "skipped" | "failed";
  readonly error?: unknown;
}

/**
 * The messages of one chat that came after `cursor.lastMessageId`, oldest first, fetched through
 * discord.js's REST (`channel.messages.fetch({ after, limit: 100 })`, Discord answers each page
 * newest first) page by page until none are left or `maxMessages` were fetched (then the newer
 * ones are not fetched, and that is logged). A chat that is gone or not accessible (404/403), or
 * that Discord refuses otherwise, is logged and `skipped`; transient failures (5xx, transport, a
 * long rate limit) are retried per the retry policy, then `failed`, with what was fetched before.
 * Never throws.
 */
async function fetchMissed(
  client: Client,
  cursor: ChatCursor,
  options: FetchMissedOptions,
): Promise<Fetched> {
  const { log, signal } = options;
  const fields = { channelId: cursor.channelId, after: cursor.lastMessageId };
  const retrying = <T>(operation: () => Promise<T>) =>
    withRetry(operation, {
      classify: discordRetryVerdict,
      options: options.retry,
      signal,
      onRetry: (event) =>
        log.warn(
          {
            ...fields,
            attempt: event.attempt,
            delayMs: event.delayMs,
            err: describeError(event.error),
          },
          "discord catch-up fetch failed; retrying",
        ),
    });
  const messages: Message[] = [];
  try {
    const channel = await retrying(() => client.channels.fetch(cursor.channelId));
    if (!channel?.isTextBased()) {
      log.warn(fields, "discord catch-up skipped a chat that holds no messages");
      return { messages, outcome: "skipped" };
    }
    let after = cursor.lastMessageId;
    while (messages.length < options.maxMessages) {
      const limit = Math.min(PageSize, options.maxMessages - messages.length);
      const page = await retrying(() => channel.messages.fetch({ after, limit, cache: false }));
      const ordered = [...page.values()].sort((a, b) => compareSnowflakes(a.id, b.id));
      messages.push(...ordered);
      const newest = ordered.at(-1);
      if (newest === undefined || ordered.length < limit) return { messages, outcome: "complete" };
      after = newest.id;
    }
    const more = await retrying(() => channel.messages.fetch({ after, limit: 1, cache: false }));
    if (more.size === 0) return { messages, outcome: "complete" };
    log.warn(
      {
        ...fields,
        fetched: messages.length,
        lastFetchedId: after,
        maxMessages: options.maxMessages,
      },
      "discord catch-up stopped at catchUpMaxMessages; later messages of this chat are not answered",
    );
    return { messages, outcome: "truncated" };
  } catch (error) {
    if (signal.aborted) return { messages, outcome: "complete" };
    if (error instanceof RateLimitedError || discordRetryVerdict(error).retry) {
      return { messages, outcome: "failed", error };
    }
    const status = error instanceof DiscordAPIError ? error.status : undefined;
    if (status === 401) options.onUnauthorized();
    if (status === 404 || status === 403) {
      log.warn(
        { ...fields, err: describeError(error) },
        status === 404
          ? "discord catch-up skipped a chat that no longer exists"
          : "discord catch-up skipped a chat the bot cannot read",
      );
    } else {
      log.error(
        { ...fields, fetched: messages.length, err: describeError(error) },
        "discord catch-up gave up on this chat; messages fetched before the failure are kept",
      );
    }
    return { messages, outcome: "skipped" };
  }
}

/** What {@link DiscordCatchUp} works with. */
export interface CatchUpOptions {
  readonly client: Client;
  /** The live messages' queues: a chat is held there while it is fetched. */
  readonly queues: InboundQueues;
  /** `catchUpMaxMessages`. */
  readonly maxMessages: number;
  readonly retry: RetryOptions | undefined;
  readonly log: Logger;
  /** The waits between fetches of a chat that failed (the queues' backoff). */
  readonly sleep: Sleep;
  /** Aborted when the channel stops. */
  readonly signal: AbortSignal;
  readonly onUnauthorized: () => void;
  /** The live messages' mapping: `undefined` for a message the bot does not answer. */
  readonly toInbound: (message: Message) => InboundMessage | undefined;
}

/** One chat being caught up. */
interface ChatRun {
  readonly channelId: string;
  /** Fetch after this id: the cursor, then the newest message fetched so far. */
  after: string;
  fetched: number;
  failures: number;
  /** Lets the chat's live messages go (after the fetched ones). */
  readonly release: () => void;
}

/**
 * Fetches what each chat received after its cursor and queues it ahead of the chat's live
 * messages (docs/durability.md, "Catching up"). A chat is held until everything after its
 * cursor was fetched and queued, so no later message is recorded first: the cursor (the newest
 * recorded message) never passes one that was not. A fetch that keeps failing is tried again
 * after the queues' backoff, its live messages waiting; a chat Discord will not give (gone,
 * unreadable, refused) is logged and let go.
 */
export class DiscordCatchUp {
  /** The catch-up of the current gateway session, while it runs. */
  #session: AbortController | undefined;
  /** Lets every chat go: held while there is no session (see {@link disconnected}). */
  #releaseBetween: (() => void) | undefined;

  constructor(private readonly options: CatchUpOptions) {}

  /**
   * There is no session (before the first, or the socket closed): every chat is held until
   * the next one is resumed or caught up. Holding from the close, not from READY, does not
   * depend on discord.js emitting READY before the session's first messages (it handles
   * each frame asynchronously).
   */
  disconnected(): void {
    this.#releaseBetween ??= this.options.queues.holdAll();
  }

  /** The session was resumed: Discord replays what it missed, and the chats go on. */
  resumed(): void {
    this.#releaseBetween?.();
    this.#releaseBetween = undefined;
  }

  /**
   * A new gateway session began (READY after an IDENTIFY) and its servers arrived (the
   * channel calls it at `shardReady`): Discord replays nothing from before it, so every chat
   * with a cursor is caught up. Every chat stays held (since the socket
   * closed, or from now on) while the cursors are read (again after a backoff while that
   * fails); then their chats are held on their own, the others let go, and each chat fetched.
   * A catch-up of an earlier session still running is ended. Never rejects.
   */
  async afterReady(
    readCursors: () => Promise<readonly ChatCursor[]>,
    onMessage: InboundHandler,
  ): Promise<void> {
    const releaseAll = this.#releaseBetween ?? this.options.queues.holdAll();
    this.#releaseBetween = undefined;
    this.#session?.abort();
    const session = new AbortController();
    this.#session = session;
    // Not `AbortSignal.any`: on Node 20 it would add to the channel's stop signal at every new
    // gateway session and never take away (combinedSignal).
    const bounded = combinedSignal([this.options.signal, session.signal]);
    const { signal } = bounded;
    try {
      const cursors = await this.#readCursors(readCursors, signal);
      if (cursors === undefined) return;
      this.options.log.info(
        { chats: cursors.length },
        "discord gateway session began; catching up on each chat since its last recorded message",
      );
      const chats = this.#hold(cursors);
      releaseAll();
      await this.#run(chats, onMessage, signal);
    } finally {
      releaseAll();
      bounded.release();
      if (this.#session === session) this.#session = undefined;
    }
  }

  /** Catches up `cursors` (see the class). Resolves once every chat was fetched and queued. */
  async run(cursors: readonly ChatCursor[], onMessage: InboundHandler): Promise<void> {
    await this.#run(this.#hold(cursors), onMessage, this.options.signal);
  }

  #hold(cursors: readonly ChatCursor[]): ChatRun[] {
    return cursors.map((cursor) => ({
      channelId: cursor.channelId,
      after: cursor.lastMessageId,
      fetched: 0,
      failures: 0,
      release: this.options.queues.hold(cursor.channelId),
    }));
  }

  async #readCursors(
    read: () => Promise<readonly ChatCursor[]>,
    signal: AbortSignal,
  ): Promise<readonly ChatCursor[] | undefined> {
    for (let failures = 1; !signal.aborted; failures++) {
      try {
        return await read();
      } catch (error) {
        const retryInMs = this.options.queues.retryDelayMs(failures);
        const fields = { err: describeError(error), retryInMs, failures };
        if (failures === 1) {
          this.options.log.error(
            fields,
            "discord catch-up could not read the journal's cursors; every chat waits",
          );
        } else this.options.log.debug(fields, "discord catch-up still cannot read the cursors");
        try {
          await this.options.sleep(retryInMs, signal);
        } catch {
          // the catch-up ended while waiting
        }
      }
    }
    return undefined;
  }

  /**
   * Fetches the chats one after the other; one that failed is fetched again after a backoff,
   * beside the others, until it is done or the catch-up ends. Resolves when every fetched
   * message was accepted (or the queues stopped).
   */
  async #run(chats: readonly ChatRun[], onMessage: InboundHandler, signal: AbortSignal) {
    const accepted: Promise<boolean>[] = [];
    const retrying: Promise<void>[] = [];
    try {
      for (const chat of chats) {
        if (signal.aborted) break;
        if (await this.#attempt(chat, onMessage, accepted, signal)) chat.release();
        else retrying.push(this.#untilFetched(chat, onMessage, accepted, signal));
      }
      await Promise.all(retrying);
    } finally {
      for (const chat of chats) chat.release();
    }
    const results = await Promise.all(accepted);
    this.options.log.info(
      {
        chats: chats.length,
        fetched: chats.reduce((sum, chat) => sum + chat.fetched, 0),
        handed: results.filter(Boolean).length,
        notRecorded: results.filter((ok) => !ok).length,
      },
      "discord catch-up done",
    );
  }

  /** Fetches the rest of one chat and queues it; false when it failed and is to be tried again. */
  async #attempt(
    chat: ChatRun,
    onMessage: InboundHandler,
    accepted: Promise<boolean>[],
    signal: AbortSignal,
  ): Promise<boolean> {
    const { messages, outcome, error } = await fetchMissed(
      this.options.client,
      { channelId: chat.channelId, lastMessageId: chat.after },
      {
        maxMessages: this.options.maxMessages - chat.fetched,
        retry: this.options.retry,
        log: this.options.log,
        signal,
        onUnauthorized: this.options.onUnauthorized,
      },
    );
    chat.fetched += messages.length;
    chat.after = messages.at(-1)?.id ?? chat.after;
    for (const message of messages) {
      const inbound = this.options.toInbound(message);
      if (inbound) accepted.push(this.options.queues.push(chat.channelId, inbound, onMessage));
    }
    if (outcome !== "failed" || signal.aborted) return true;
    chat.failures += 1;
    const fields = {
      channelId: chat.channelId,
      after: chat.after,
      failures: chat.failures,
      retryInMs: this.options.queues.retryDelayMs(chat.failures),
      err: describeError(error),
    };
    if (chat.failures === 1) {
      this.options.log.error(
        fields,
        "discord catch-up could not fetch this chat; it is fetched again later, its new messages wait",
      );
    } else this.options.log.debug(fields, "discord catch-up still cannot fetch this chat");
    return false;
  }

  async #untilFetched(
    chat: ChatRun,
    onMessage: InboundHandler,
    accepted: Promise<boolean>[],
    signal: AbortSignal,
  ): Promise<void> {
    try {
      while (!signal.aborted) {
        try {
          await this.options.sleep(this.options.queues.retryDelayMs(chat.failures), signal);
        } catch {
          return; // the catch-up ended while waiting
        }
        if (await this.#attempt(chat, onMessage, accepted, signal)) {
          if (signal.aborted) return;
          this.options.log.info(
            { channelId: chat.channelId, failures: chat.failures },
            "discord catch-up fetched this chat after retrying",
          );
          return;
        }
      }
    } finally {
      chat.release();
    }
  }
}
