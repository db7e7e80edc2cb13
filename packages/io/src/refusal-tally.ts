import { type Schedule, scheduleWithTimer } from "./schedule.js";

/** One period's refusals, as {@link RefusalTallyOptions.write} is handed them. */
export interface RefusalPeriod<K extends string> {
  /** Refusals of each kind. */
  readonly counts: Readonly<Record<K, number>>;
  /** Refusals of every kind. */
  readonly total: number;
  /** Addresses counted one by one (at most `maxAddresses`). */
  readonly addresses: number;
  /** More addresses were refused than `maxAddresses` counted one by one. */
  readonly more: boolean;
  /** `"3 addresses"`, `"1 address"`, `"more than 10000 addresses"`: where they came from. */
  readonly from: string;
  /** The most refused addresses, the most first (at most `topAddresses`). */
  readonly top: readonly { readonly address: string; readonly refused: number }[];
  /** The period's length so far, in whole seconds (at least 1). */
  readonly seconds: number;
}

/** Options of {@link RefusalTally}. */
export interface RefusalTallyOptions<K extends string> {
  readonly kinds: readonly K[];
  /** Writes a period's summary (one log line). */
  readonly write: (period: RefusalPeriod<K>) => void;
  /** How long a period lasts from its first refusal. */
  readonly intervalMs: number;
  /** Addresses counted one by one per period; past it, the rest only in the totals. */
  readonly maxAddresses: number;
  /** Addresses a summary names. */
  readonly topAddresses: number;
  readonly now?: (() => number) | undefined;
  /** The period's timer (default {@link scheduleWithTimer}, unref'd). */
  readonly schedule?: Schedule | undefined;
}

/**
 * Counts refused requests by kind and address, and hands one summary per `intervalMs` in which
 * anything was refused to `write`, never one per refusal: whoever sends the requests needs no
 * credential to be refused, and must not flood the log. The period starts at its first
 * refusal; {@link flush} writes a summary still owed (at a stop). Memory stays bounded by
 * `maxAddresses` whatever the flood. The web console's refusals and the Telegram webhook's
 * both use it.
 */
export class RefusalTally<K extends string> {
  readonly #options: RefusalTallyOptions<K>;
  readonly #now: () => number;
  readonly #schedule: Schedule;
  #counts: Record<K, number>;
  #byAddress = new Map<string, number>();
  /** More addresses refused than were counted one by one. */
  #moreAddresses = false;
  #startMs = 0;
  #cancel: (() => void) | undefined;

  constructor(options: RefusalTallyOptions<K>) {
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#schedule = options.schedule ?? scheduleWithTimer;
    this.#counts = this.#none();
  }

  /** Counts one refusal of a request from `address`. */
  count(kind: K, address: string): void {
    if (this.#cancel === undefined) {
      this.#startMs = this.#now();
      this.#cancel = this.#schedule(() => this.flush(), this.#options.intervalMs);
    }
    this.#counts[kind] += 1;
    const seen = this.#byAddress.get(address);
    if (seen !== undefined) this.#byAddress.set(address, seen + 1);
    else if (this.#byAddress.size < this.#options.maxAddresses) this.#byAddress.set(address, 1);
    else this.#moreAddresses = true;
  }

  /** Writes the summary of what was counted since the last one, if anything, and starts over. */
  flush(): void {
    this.#cancel?.();
    this.#cancel = undefined;
    const counts = this.#counts;
    const total = this.#options.kinds.reduce((sum, kind) => sum + counts[kind], 0);
    if (total === 0) return;
    const addresses = this.#byAddress.size;
    const top = [...this.#byAddress]
      .sort(([, a], [, b]) => b - a)
      .slice(0, this.#options.topAddresses)
      .map(([address, refused]) => ({ address, refused }));
    const more = this.#moreAddresses;
    const from = `${more ? "more than " : ""}${addresses} ${addresses === 1 ? "address" : "addresses"}`;
    const seconds = Math.max(1, Math.round((this.#now() - this.#startMs) / 1000));
    this.#counts = this.#none();
    this.#byAddress = new Map();
    this.#moreAddresses = false;
    this.#options.write({ counts, total, addresses, more, from, top, seconds });
  }

  #none(): Record<K, number> {
    return Object.fromEntries(this.#options.kinds.map((kind) => [kind, 0])) as Record<K, number>;
  }
}
