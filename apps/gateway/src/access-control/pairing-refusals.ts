import { RefusalTally, type Schedule, scheduleWithTimer } from "@mediagate/io";
import { Defaults } from "../defaults.js";
import type { Logger } from "../log.js";

/** Options of {@link PairingRefusals}. */
export interface PairingRefusalsOptions {
  readonly logger: Pick<Logger, "warn">;
  /** The profile's `pairing.maxPendingCodes`, named in the summary. */
  readonly maxPendingCodes: number;
  readonly now?: (() => number) | undefined;
  /** The summary's timer (default real, unref'd timers); tests fire it by hand. */
  readonly schedule?: Schedule | undefined;
}

/**
 * A profile's code requests refused because `pairing.maxPendingCodes` codes are waiting,
 * counted by user and logged as one warning per `Defaults.pairingRefusals.summaryMs` in which
 * any came (`pairing: refused a code to 812 requests of 3 users in the last 60 s …`), never a
 * line each (@mediagate/io's `RefusalTally`, as the web console's and the webhook's refusals):
 * anyone can DM the bot, and a flood of strangers must not flood the log. A summary still
 * owed is written by {@link flush} at the profile's close.
 */
export class PairingRefusals {
  readonly #tally: RefusalTally<"full">;

  constructor(options: PairingRefusalsOptions) {
    const { logger, maxPendingCodes } = options;
    this.#tally = new RefusalTally({
      kinds: ["full"],
      write: ({ total, addresses, more, top, seconds }) => {
        const users = `${more ? "more than " : ""}${addresses} user${addresses === 1 ? "" : "s"}`;
        logger.warn(
          {
            refused: total,
            users: addresses,
            top: top.map(({ address, refused }) => ({ user: address, refused })),
            seconds,
            maxPendingCodes,
          },
          `pairing: refused a code to ${total} request${total === 1 ? "" : "s"} of ${users} in the last ${seconds} s: ${maxPendingCodes} codes are pending already (pairing.maxPendingCodes)`,
        );
      },
      intervalMs: Defaults.pairingRefusals.summaryMs,
      maxAddresses: Defaults.pairingRefusals.maxUsers,
      topAddresses: Defaults.pairingRefusals.topUsers,
      now: options.now,
      schedule: options.schedule ?? scheduleWithTimer,
    });
  }

  /** Counts one refused request of `user` (`<platform>:<id>`). */
  count(user: string): void {
    this.#tally.count("full", user);
  }

  /** Writes the summary still owed, if any, and stops its timer. */
  flush(): void {
    this.#tally.flush();
  }
}
