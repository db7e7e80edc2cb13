/** A 429 as Discord answers a route's rate limit: JSON body and `retry-after` (seconds). */
export interface EditLimitAnswer {
  readonly status: 429;
  readonly body: { message: string; retry_after: number; global: false };
  readonly headers: Record<string, string>;
}

/** How often the fake lets a bot edit messages in one channel. */
export interface DiscordEditLimitOptions {
  /** Edits per channel within `windowMs` (default 5). */
  readonly perWindow?: number;
  /** Default 5000 (Discord: five edits per five seconds in a channel). */
  readonly windowMs?: number;
  readonly now?: () => number;
}

/**
 * Discord's pace for message edits as a bot meets it: five per five seconds per channel; over
 * it, a 429 with the wait in `retry_after` and the `retry-after` header, the edit not done.
 * Keeps the times of the edits it let through, so a test can count the pace a client kept.
 */
export class DiscordEditLimits {
  readonly #perWindow: number;
  readonly #windowMs: number;
  readonly #now: () => number;
  readonly #accepted = new Map<string, number[]>();
  /** 429s answered. */
  refused = 0;

  constructor(options: DiscordEditLimitOptions = {}) {
    this.#perWindow = options.perWindow ?? 5;
    this.#windowMs = options.windowMs ?? 5000;
    this.#now = options.now ?? Date.now;
  }

  /** The 429 for an edit in `channelId` now, or undefined (then the edit counts). */
  check(channelId: string): EditLimitAnswer | undefined {
    const now = this.#now();
    const times = this.#accepted.get(channelId) ?? [];
    const recent = times.filter((time) => time > now - this.#windowMs);
    const oldest = recent[recent.length - this.#perWindow];
    if (recent.length >= this.#perWindow && oldest !== undefined) {
      this.refused += 1;
      const seconds = Math.max(0.001, (oldest + this.#windowMs - now) / 1000);
      return {
        status: 429,
        body: { message: "You are being rate limited.", retry_after: seconds, global: false },
        headers: { "retry-after": String(Math.ceil(seconds)), "x-ratelimit-scope": "user" },
      };
    }
    times.push(now);
    this.#accepted.set(channelId, times);
    return undefined;
  }

  /** The most edits let through in `channelId` within any `windowMs`. */
  most(channelId: string, windowMs = this.#windowMs): number {
    const times = this.#accepted.get(channelId) ?? [];
    let most = 0;
    for (const [index, start] of times.entries()) {
      most = Math.max(most, times.slice(index).filter((time) => time < start + windowMs).length);
    }
    return most;
  }
}
