import { Defaults } from "../defaults.js";
import type {
  Conversation,
  ConversationRead,
  ConversationSummary,
  KnownConversation,
  StoredMessage,
} from "./conversation.js";
import type { ChatMessage } from "./types.js";

/** One store's part of a {@link ConversationCache}. */
export interface ConversationScope {
  /**
   * The conversation of `sessionId`: `read` asks the database with what is held (`undefined`:
   * nothing) and gets its {@link ConversationRead}.
   */
  load(
    sessionId: string,
    read: (known: KnownConversation | undefined) => Promise<ConversationRead>,
  ): Promise<Conversation>;
  /** Lets go of the scope's conversations (its store closed). */
  close(): void;
}

/** Estimated weight of a message beyond its stored text: its objects and the cache's slot. */
const MessageOverheadChars = 96;

interface Entry {
  /** Frozen: the agent keeps the system message it makes from it by the object. */
  readonly summary: ConversationSummary | undefined;
  /** Frozen, as their messages: handed to every reader as they are. */
  readonly messages: readonly StoredMessage[];
  readonly chars: number;
}

/**
 * The conversations the stores read last, kept on the calling side of a store so a turn reads
 * only the messages added since, not the whole conversation again. Reading, parsing and
 * copying a conversation between threads cost a turn 0.8 ms of CPU at 200 messages and 7 ms at
 * 2,000, more than the rest of the gateway's work for an answer; read once, 0.18 and 0.42 ms
 * (`bench:storage`, bench/README.md, "a conversation read once").
 *
 * Every load still asks the database, naming what is held ({@link KnownConversation}); the
 * database checks it against its rows in the same read (`stillHolds`) and answers with
 * the newer messages or, when anything else changed (a compaction, a cleared history, another
 * process's writes), the whole conversation. So the cache can be out of date but never serves
 * what is not in the database, and it needs no word of the writes.
 *
 * Bounded by `maxChars` of stored text (plus an allowance per message), least recently loaded
 * first out; a conversation larger than that alone is not kept. One cache serves every store of
 * the process ({@link shared}), each under a scope of its own ({@link scope}), so the bound is
 * the process's whatever the number of profiles. The messages of a conversation it keeps are
 * frozen: a reader that changed one would change every later turn's view. One it does not keep
 * (over the bound, or a store of its own with none) is handed out as read.
 */
export class ConversationCache {
  static #shared: ConversationCache | undefined;
  readonly #maxChars: number;
  readonly #entries = new Map<string, Entry>();
  #chars = 0;
  #scopes = 0;

  constructor(maxChars: number) {
    this.#maxChars = maxChars;
  }

  /** The process's cache, bounded by `Defaults.state.conversationCacheChars`. */
  static shared(): ConversationCache {
    ConversationCache.#shared ??= new ConversationCache(Defaults.state.conversationCacheChars);
    return ConversationCache.#shared;
  }

  /** A new scope for one store's conversations (two stores may hold the same session id). */
  scope(): ConversationScope {
    const prefix = `${++this.#scopes}:`;
    let open = true;
    return {
      load: (sessionId, read) => this.#load(prefix + sessionId, read, () => open),
      close: () => {
        open = false;
        for (const key of [...this.#entries.keys()]) if (key.startsWith(prefix)) this.#drop(key);
      },
    };
  }

  async #load(
    key: string,
    read: (known: KnownConversation | undefined) => Promise<ConversationRead>,
    open: () => boolean,
  ): Promise<Conversation> {
    const base = this.#entries.get(key);
    const answer = await read(base === undefined ? undefined : knownOf(base));
    // Another load of the session may have answered meanwhile: the first one's entry stays.
    const current = open() && this.#entries.get(key) === base;
    let entry: Entry;
    if (answer.kind === "whole") {
      const { summary, messages } = answer.conversation;
      const chars = answer.chars + MessageOverheadChars * messages.length;
      if (!current || chars > this.#maxChars) {
        if (current) this.#drop(key);
        // Kept nowhere, so handed out as read: freezing it would be work for nobody.
        return answer.conversation;
      }
      entry = {
        summary: summary === undefined ? undefined : Object.freeze({ ...summary }),
        messages: Object.freeze(messages.map(frozen)),
        chars,
      };
    } else {
      if (base === undefined)
        throw new TypeError("the database sent only new messages to a load that held none");
      entry = {
        summary: base.summary,
        messages:
          answer.messages.length === 0
            ? base.messages
            : Object.freeze([...base.messages, ...answer.messages.map(frozen)]),
        chars: base.chars + answer.chars + MessageOverheadChars * answer.messages.length,
      };
    }
    if (current) this.#keep(key, entry);
    return entry.summary === undefined
      ? { messages: entry.messages }
      : { summary: entry.summary, messages: entry.messages };
  }

  /** Conversations held and their weight, for tests and benchmarks. */
  get size(): { readonly conversations: number; readonly chars: number } {
    return { conversations: this.#entries.size, chars: this.#chars };
  }

  #keep(key: string, entry: Entry): void {
    this.#drop(key);
    if (entry.chars > this.#maxChars) return;
    this.#entries.set(key, entry);
    this.#chars += entry.chars;
    for (const [oldest, held] of this.#entries) {
      if (this.#chars <= this.#maxChars) break;
      this.#entries.delete(oldest);
      this.#chars -= held.chars;
    }
  }

  #drop(key: string): void {
    const held = this.#entries.get(key);
    if (held === undefined) return;
    this.#entries.delete(key);
    this.#chars -= held.chars;
  }
}

function knownOf(entry: Entry): KnownConversation {
  const throughId = entry.summary?.throughId ?? 0;
  const last = entry.messages[entry.messages.length - 1];
  return { throughId, lastId: last?.id ?? throughId, count: entry.messages.length };
}

/**
 * `stored` frozen through the shape of a {@link ChatMessage} (types.ts): the message, its tool
 * calls and each call's function. Walking every value instead cost 0.4–1.1 µs a message in a
 * throw-away loop, this 0.14.
 */
function frozen(stored: StoredMessage): StoredMessage {
  const message = stored.message;
  if (message.role === "assistant" && message.tool_calls !== undefined) {
    for (const call of message.tool_calls) {
      Object.freeze(call.function);
      Object.freeze(call);
    }
    Object.freeze(message.tool_calls);
  }
  return Object.freeze({ id: stored.id, message: Object.freeze(message) });
}

/**
 * The part of the process's cache a new store uses; with `maxChars`, a cache of the store's
 * own of that size instead (0: none).
 */
export function conversationScope(maxChars?: number | undefined): ConversationScope {
  return (
    maxChars === undefined ? ConversationCache.shared() : new ConversationCache(maxChars)
  ).scope();
}
