import { type ApiAnswer, fail } from "./protocol.js";

/** How often the fake lets a bot edit (and draft) in one chat (Telegram's flood control). */
export interface EditLimitOptions {
  /** Edits per chat in any second (default 1). */
  readonly perSecond?: number;
  /** Edits per group chat (negative id) in any minute (default 20). */
  readonly groupPerMinute?: number;
  /** Now, in ms (default `Date.now`). */
  readonly now?: () => number;
}

/** Methods that count as edits of what a chat shows. */
const Limited = new Set(["editMessageText", "sendMessageDraft"]);

/**
 * Telegram's pace for edits as a bot meets it: about one a second per chat, 20 a minute in a
 * group; over it, a 429 with `parameters.retry_after` (whole seconds) and the call not done.
 * Keeps the times of the calls it let through, so a test can count the pace a client kept.
 */
export class EditLimits {
  readonly #perSecond: number;
  readonly #groupPerMinute: number;
  readonly #now: () => number;
  readonly #accepted = new Map<string, number[]>();
  /** 429s answered. */
  refused = 0;

  constructor(options: EditLimitOptions = {}) {
    this.#perSecond = options.perSecond ?? 1;
    this.#groupPerMinute = options.groupPerMinute ?? 20;
    this.#now = options.now ?? Date.now;
  }

  /** The 429 for `method` in `chatId` now, or undefined (then the call counts). */
  check(method: string, chatId: string): ApiAnswer | undefined {
    if (!Limited.has(method)) return undefined;
    const now = this.#now();
    const times = this.#accepted.get(chatId) ?? [];
    const waitMs = Math.max(
      this.#wait(times, now, 1000, this.#perSecond),
      chatId.startsWith("-") ? this.#wait(times, now, 60_000, this.#groupPerMinute) : 0,
    );
    if (waitMs > 0) {
      this.refused += 1;
      const seconds = Math.max(1, Math.ceil(waitMs / 1000));
      return fail(429, `Too Many Requests: retry after ${seconds}`, { retry_after: seconds });
    }
    times.push(now);
    this.#accepted.set(chatId, times);
    return undefined;
  }

  /** The most edits let through in `chatId` within any `windowMs`. */
  most(chatId: string, windowMs = 1000): number {
    const times = this.#accepted.get(chatId) ?? [];
    let most = 0;
    for (const [index, start] of times.entries()) {
      const within = times.slice(index).filter((time) => time < start + windowMs).length;
      most = Math.max(most, within);
    }
    return most;
  }

  #wait(times: readonly number[], now: number, windowMs: number, max: number): number {
    const recent = times.filter((time) => time > now - windowMs);
    const oldest = recent[recent.length - max];
    return recent.length >= max && oldest !== undefined ? oldest + windowMs - now : 0;
  }
}
