import { AsyncLocalStorage } from "node:async_hooks";
import type { ChatType, Platform } from "../channels/types.js";

/** Who a turn belongs to; bound for the whole turn, tool calls and sub-tasks included. */
export interface SessionContext {
  readonly profile: string;
  readonly platform: Platform;
  readonly chatId: string;
  readonly chatType: ChatType;
  readonly chatName?: string | undefined;
  readonly threadId?: string | undefined;
  readonly userId: string;
  readonly userName?: string | undefined;
  readonly messageId: string;
  readonly sessionKey: string;
  /** Changes on /reset; conversation history is keyed by it. */
  readonly sessionId: string;
}

/**
 * The AsyncLocalStorage session scope (docs/sessions.md). A context bound with {@link run} always wins;
 * the process-wide fallback key (from `MEDIAGATE_SESSION_KEY`, passed in by the caller, never
 * read here) only answers {@link sessionKey} when nothing is bound.
 */
export class SessionScope {
  readonly #storage = new AsyncLocalStorage<SessionContext>();
  readonly #fallbackSessionKey: string | undefined;

  constructor(options: { fallbackSessionKey?: string | undefined } = {}) {
    this.#fallbackSessionKey = options.fallbackSessionKey;
  }

  /** Runs `fn` with `context` bound for everything it awaits or schedules. */
  run<T>(context: SessionContext, fn: () => T): T {
    return this.#storage.run(context, fn);
  }

  /** The bound context, if any. */
  current(): SessionContext | undefined {
    return this.#storage.getStore();
  }

  /** The bound session key, else the env fallback, else undefined. */
  sessionKey(): string | undefined {
    return this.#storage.getStore()?.sessionKey ?? this.#fallbackSessionKey;
  }
}
