import { backoffMs } from "@mediagate/io";
import { LRUCache } from "lru-cache";
import { WebDefaults } from "./defaults.js";

/** Options of {@link LoginLimiter}; each default is the `WebDefaults` entry of the same idea. */
export interface LoginLimiterOptions {
  readonly now?: (() => number) | undefined;
  /** Wrong tokens in a row after which an address waits (`WebDefaults.loginFailuresBeforeWait`). */
  readonly failuresBeforeWait?: number | undefined;
  /** The first wait, doubled by each further wrong token (`WebDefaults.loginFirstWaitMs`). */
  readonly firstWaitMs?: number | undefined;
  /** The longest wait (`WebDefaults.loginMaxWaitMs`). */
  readonly maxWaitMs?: number | undefined;
  /** How long after its last wrong token an address is forgotten (`WebDefaults.loginForgetMs`). */
  readonly forgetMs?: number | undefined;
  /** Addresses remembered at once (`WebDefaults.loginMaxAddresses`). */
  readonly maxAddresses?: number | undefined;
}

interface Failures {
  count: number;
  lastMs: number;
  /** No login of this address is checked before then. */
  untilMs: number;
}

/**
 * The address a limit applies to: an IPv4 address (an IPv4-mapped IPv6 one as IPv4), or the
 * /64 network of an IPv6 address (one host commonly holds a whole /64, so counting its single
 * addresses would let it start afresh at will).
 */
export function limitedAddress(ip: string): string {
  const bare = ip.replace(/%.*$/, "").toLowerCase();
  const mapped = /^::ffff:(\d{1,3}(\.\d{1,3}){3})$/.exec(bare);
  if (mapped !== null) return mapped[1]!;
  if (!bare.includes(":")) return bare;
  const [head = "", tail] = bare.split("::");
  const front = head === "" ? [] : head.split(":");
  const back = tail === undefined || tail === "" ? [] : tail.split(":");
  const zeros = tail === undefined ? 0 : Math.max(0, 8 - front.length - back.length);
  const groups = [...front, ...Array<string>(zeros).fill("0"), ...back];
  const network = groups.slice(0, 4).map((g) => Number.parseInt(g, 16).toString(16));
  return `${network.join(":")}::/64`;
}

/**
 * Wrong console tokens per address, and how long each address must wait before its next login
 * is checked: after `failuresBeforeWait` wrong tokens in a row, `firstWaitMs`, doubled by each
 * further wrong token up to `maxWaitMs`. A login that succeeds forgets the address; so does
 * `forgetMs` without a wrong token.
 *
 * The waits are ours rather than @fastify/rate-limit's: that plugin counts requests, not wrong
 * tokens, cannot forget an address on a successful login, and its store reads `Date.now()` (no
 * clock to inject). The memory is lru-cache's: at most `maxAddresses` addresses, the one with
 * the oldest wrong token forgotten first, so a flood from many addresses cannot grow it. At
 * 10,000 addresses a wrong token from a new one costs 4 µs here; a Map trimmed from its oldest
 * key took 61 µs (its iterator skips the holes the deletes leave).
 */
export class LoginLimiter {
  readonly #now: () => number;
  readonly #failuresBeforeWait: number;
  readonly #firstWaitMs: number;
  readonly #maxWaitMs: number;
  readonly #forgetMs: number;
  readonly #failures: LRUCache<string, Failures>;

  constructor(options: LoginLimiterOptions = {}) {
    this.#now = options.now ?? Date.now;
    this.#failuresBeforeWait = options.failuresBeforeWait ?? WebDefaults.loginFailuresBeforeWait;
    this.#firstWaitMs = options.firstWaitMs ?? WebDefaults.loginFirstWaitMs;
    this.#maxWaitMs = options.maxWaitMs ?? WebDefaults.loginMaxWaitMs;
    this.#forgetMs = options.forgetMs ?? WebDefaults.loginForgetMs;
    this.#failures = new LRUCache({
      max: options.maxAddresses ?? WebDefaults.loginMaxAddresses,
    });
  }

  /** How long `ip` must still wait before a login of its is checked (0: at once). */
  waitMs(ip: string): number {
    const key = limitedAddress(ip);
    const failures = this.#failures.peek(key);
    if (failures === undefined) return 0;
    const now = this.#now();
    if (this.#expired(failures, now)) {
      this.#failures.delete(key);
      return 0;
    }
    return Math.max(0, failures.untilMs - now);
  }

  /** Counts a wrong token of `ip`; answers how long it must now wait (0: not at all). */
  failed(ip: string): number {
    const key = limitedAddress(ip);
    const now = this.#now();
    const previous = this.#failures.peek(key);
    const count = previous === undefined || this.#expired(previous, now) ? 1 : previous.count + 1;
    const excess = count - this.#failuresBeforeWait;
    const waitMs =
      excess < 0 ? 0 : backoffMs(excess + 1, { baseMs: this.#firstWaitMs, maxMs: this.#maxWaitMs });
    this.#failures.set(key, { count, lastMs: now, untilMs: now + waitMs });
    return waitMs;
  }

  /** A right token of `ip`: its wrong ones are forgotten. */
  succeeded(ip: string): void {
    this.#failures.delete(limitedAddress(ip));
  }

  /** Addresses remembered now. */
  get size(): number {
    return this.#failures.size;
  }

  #expired(failures: Failures, now: number): boolean {
    return now >= Math.max(failures.untilMs, failures.lastMs + this.#forgetMs);
  }
}
