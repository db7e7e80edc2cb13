import { type Schedule, scheduleWithTimer } from "@mediagate/io";
import { WebDefaults } from "./defaults.js";

/** What the console refused: a wrong token, a login while its address waits, a cross-site
 * request, a request for a host name the console does not answer. */
export type RefusalKind = "wrongToken" | "waiting" | "crossSite" | "unknownHost";

/** Where {@link RefusalLog} writes its summary (a pino logger has it). */
export interface RefusalLogger {
  warn(fields: object, message: string): void;
}

/** Options of {@link RefusalLog}; each default is the `WebDefaults` entry of the same idea. */
export interface RefusalLogOptions {
  readonly logger: RefusalLogger;
  readonly now?: (() => number) | undefined;
  /** The summary's timer (default @mediagate/io's `scheduleWithTimer`, unref'd). */
  readonly schedule?: Schedule | undefined;
  /** The summary's period (`WebDefaults.refusalSummaryMs`). */
  readonly intervalMs?: number | undefined;
  /** Addresses counted one by one per period (`WebDefaults.refusalMaxAddresses`). */
  readonly maxAddresses?: number | undefined;
}

const noRefusals = (): Record<RefusalKind, number> => ({
  wrongToken: 0,
  waiting: 0,
  crossSite: 0,
  unknownHost: 0,
});

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * Counts what the console refuses and logs one summary line per `intervalMs` in which anything
 * was refused (`web console: refused 8412 logins … from 3 addresses in the last 60 s`), never a
 * line per refusal: whoever sends the requests, no login needed, cannot flood the log (and with
 * it the Logs page's ring of the last lines). The period starts at its first refusal; a
 * summary still owed is written at {@link RefusalLog.close}.
 */
export class RefusalLog {
  readonly #logger: RefusalLogger;
  readonly #now: () => number;
  readonly #schedule: Schedule;
  readonly #intervalMs: number;
  readonly #maxAddresses: number;
  #counts = noRefusals();
  #byAddress = new Map<string, number>();
  /** More addresses refused than were counted one by one. */
  #moreAddresses = false;
  #startMs = 0;
  #cancel: (() => void) | undefined;

  constructor(options: RefusalLogOptions) {
    this.#logger = options.logger;
    this.#now = options.now ?? Date.now;
    this.#schedule = options.schedule ?? scheduleWithTimer;
    this.#intervalMs = options.intervalMs ?? WebDefaults.refusalSummaryMs;
    this.#maxAddresses = options.maxAddresses ?? WebDefaults.refusalMaxAddresses;
  }

  /** Counts one refusal of a request from `address`. */
  count(kind: RefusalKind, address: string): void {
    if (this.#cancel === undefined) {
      this.#startMs = this.#now();
      this.#cancel = this.#schedule(() => this.flush(), this.#intervalMs);
    }
    this.#counts[kind] += 1;
    const seen = this.#byAddress.get(address);
    if (seen !== undefined) this.#byAddress.set(address, seen + 1);
    else if (this.#byAddress.size < this.#maxAddresses) this.#byAddress.set(address, 1);
    else this.#moreAddresses = true;
  }

  /** Writes the summary of what was counted since the last one, if anything, and starts over. */
  flush(): void {
    this.#cancel?.();
    this.#cancel = undefined;
    const counts = this.#counts;
    const total = counts.wrongToken + counts.waiting + counts.crossSite + counts.unknownHost;
    if (total === 0) return;
    const addresses = this.#byAddress;
    const top = [...addresses]
      .sort(([, a], [, b]) => b - a)
      .slice(0, WebDefaults.refusalTopAddresses)
      .map(([address, refused]) => ({ address, refused }));
    const seconds = Math.max(1, Math.round((this.#now() - this.#startMs) / 1000));
    const logins = counts.wrongToken + counts.waiting;
    const what = [
      logins > 0 &&
        `${plural(logins, "login")} (${plural(counts.wrongToken, "wrong token")}, ${counts.waiting} while their address waited)`,
      counts.crossSite > 0 && plural(counts.crossSite, "cross-site request"),
      counts.unknownHost > 0 && `${plural(counts.unknownHost, "request")} for an unknown host`,
    ].filter((part) => part !== false);
    const from = `${this.#moreAddresses ? "more than " : ""}${plural(addresses.size, "address", "addresses")}`;
    this.#logger.warn(
      { refused: { ...counts }, addresses: addresses.size, top, seconds },
      `web console: refused ${what.join(", ")} from ${from} in the last ${seconds} s`,
    );
    this.#counts = noRefusals();
    this.#byAddress = new Map();
    this.#moreAddresses = false;
  }

  /** Writes the summary still owed and stops the timer. */
  close(): void {
    this.flush();
  }
}
