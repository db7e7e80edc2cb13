import type { Logger } from "../log.js";
import type { OpenCheck } from "../sqlite/integrity.js";

/** A database opened after an integrity check: the journal or a profile's state store. */
export interface CheckedDatabase {
  readonly check: OpenCheck;
  /** Set by the store once it knows the file is damaged (its error names the way out). */
  readonly damage: Error | undefined;
}

/**
 * Logs what the integrity check at open did not settle before the start went on (a damaged
 * file found within the wait already failed the open): a check that could not run (warn), and
 * one that outlasted the wait (warn), then its verdict when it comes — a damaged file at error
 * level with the store's line, which names the way out. A check stopped because its database
 * was closed (the gateway stopped first) has no verdict, and nothing more is logged.
 */
export function logOpenCheck(logger: Logger, database: CheckedDatabase): void {
  const { path, waitMs, early, report } = database.check;
  if (early !== undefined) {
    if (early.status === "unchecked") {
      logger.warn({ path, reason: early.reason }, `could not check ${path} for damage; going on`);
    }
    return;
  }
  logger.warn(
    { path, waitMs },
    `the check of ${path} for damage did not finish within ${waitMs} ms; the gateway starts without waiting, and the check goes on`,
  );
  void report.then((late) => {
    if (late.status === "damaged") {
      logger.error(
        { path, problems: late.problems },
        database.damage?.message ?? `${path} is damaged`,
      );
    } else if (late.status === "unchecked") {
      logger.warn({ path, reason: late.reason }, `could not check ${path} for damage; going on`);
    } else if (late.status === "sound") {
      logger.info({ path }, `the check of ${path} found no damage`);
    }
  });
}
