import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { WebDefaults } from "./defaults.js";

/** One logged-in browser. */
export interface LoginSession {
  readonly id: string;
  /** Short, loggable name of the session (`web:<8 hex>`): never the cookie value. */
  readonly actor: string;
  readonly address: string;
  readonly createdMs: number;
  lastSeenMs: number;
}

/** Options of {@link LoginSessions}. */
export interface LoginSessionsOptions {
  readonly now?: (() => number) | undefined;
  readonly idleMs?: number | undefined;
  readonly maxMs?: number | undefined;
  readonly max?: number | undefined;
}

/** Compares two secrets in constant time (through their hashes: lengths may differ). */
export function sameSecret(given: string, expected: string): boolean {
  const a = createHash("sha256").update(given).digest();
  const b = createHash("sha256").update(expected).digest();
  return timingSafeEqual(a, b);
}

/**
 * The console's login sessions, in memory (a restart logs everybody out). Ids are 32 random
 * bytes; a session ends when unused for `idleMs`, `maxMs` after its login, at logout, or when
 * `max` newer ones push it out.
 */
export class LoginSessions {
  readonly #sessions = new Map<string, LoginSession>();
  readonly #now: () => number;
  readonly #idleMs: number;
  readonly #maxMs: number;
  readonly #max: number;

  constructor(options: LoginSessionsOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#idleMs = options.idleMs ?? WebDefaults.sessionIdleMs;
    this.#maxMs = options.maxMs ?? WebDefaults.sessionMaxMs;
    this.#max = options.max ?? WebDefaults.maxSessions;
  }

  create(address: string): LoginSession {
    const id = randomBytes(32).toString("base64url");
    const actor = `web:${createHash("sha256").update(id).digest("hex").slice(0, 8)}`;
    const now = this.#now();
    const session: LoginSession = { id, actor, address, createdMs: now, lastSeenMs: now };
    while (this.#sessions.size >= this.#max) {
      const oldest = this.#sessions.keys().next().value;
      if (oldest === undefined) break;
      this.#sessions.delete(oldest);
    }
    this.#sessions.set(id, session);
    return session;
  }

  /** The live session of cookie value `id` (its last use moved to now), if any. */
  touch(id: string | undefined): LoginSession | undefined {
    if (id === undefined || id === "") return undefined;
    const session = this.#sessions.get(id);
    if (session === undefined) return undefined;
    const now = this.#now();
    if (now - session.lastSeenMs > this.#idleMs || now - session.createdMs > this.#maxMs) {
      this.#sessions.delete(id);
      return undefined;
    }
    session.lastSeenMs = now;
    return session;
  }

  /** Whether the session of `id` is still live, without counting this as a use. */
  valid(id: string): boolean {
    const session = this.#sessions.get(id);
    if (session === undefined) return false;
    const now = this.#now();
    return now - session.lastSeenMs <= this.#idleMs && now - session.createdMs <= this.#maxMs;
  }

  end(id: string): void {
    this.#sessions.delete(id);
  }

  get size(): number {
    return this.#sessions.size;
  }
}
