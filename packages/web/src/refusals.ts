import { type RefusalPeriod, RefusalTally, type Schedule } from "@mediagate/io";
import { WebDefaults } from "./defaults.js";

/** What the console refused: a wrong token, a login while its address waits, a cross-site
 * request, a request for a host name the console does not answer. */
export type RefusalKind = "wrongToken" | "waiting" | "crossSite" | "unknownHost";

const Kinds: readonly RefusalKind[] = ["wrongToken", "waiting", "crossSite", "unknownHost"];

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

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/**
 * Counts what the console refuses and logs one summary line per `intervalMs` in which anything
 * was refused (`web console: refused 8412 logins … from 3 addresses in the last 60 s`), never a
 * line per refusal (@mediagate/io's `RefusalTally`): whoever sends the requests, no login
 * needed, cannot flood the log (and with it the Logs page's ring of the last lines). A
 * summary still owed is written at {@link RefusalLog.close}.
 */
export class RefusalLog {
  readonly #tally: RefusalTally<RefusalKind>;

  constructor(options: RefusalLogOptions) {
    this.#tally = new RefusalTally({
      kinds: Kinds,
      write: (period) => options.logger.warn(...summary(period)),
      intervalMs: options.intervalMs ?? WebDefaults.refusalSummaryMs,
      maxAddresses: options.maxAddresses ?? WebDefaults.refusalMaxAddresses,
      topAddresses: WebDefaults.refusalTopAddresses,
      now: options.now,
      schedule: options.schedule,
    });
  }

  /** Counts one refusal of a request from `address`. */
  count(kind: RefusalKind, address: string): void {
    this.#tally.count(kind, address);
  }

  /** Writes the summary of what was counted since the last one, if anything, and starts over. */
  flush(): void {
    this.#tally.flush();
  }

  /** Writes the summary still owed and stops the timer. */
  close(): void {
    this.#tally.flush();
  }
}

function summary(period: RefusalPeriod<RefusalKind>): [object, string] {
  const { counts, addresses, top, seconds } = period;
  const logins = counts.wrongToken + counts.waiting;
  const what = [
    logins > 0 &&
      `${plural(logins, "login")} (${plural(counts.wrongToken, "wrong token")}, ${counts.waiting} while their address waited)`,
    counts.crossSite > 0 && plural(counts.crossSite, "cross-site request"),
    counts.unknownHost > 0 && `${plural(counts.unknownHost, "request")} for an unknown host`,
  ].filter((part) => part !== false);
  return [
    { refused: { ...counts }, addresses, top, seconds },
    `web console: refused ${what.join(", ")} from ${period.from} in the last ${seconds} s`,
  ];
}
