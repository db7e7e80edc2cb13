import type Database from "better-sqlite3";

/**
 * Transactions on one database, each running the function it is handed. Inside an open
 * transaction (a batch's shared commit, grouped-commits.ts) both run a savepoint instead.
 * Rolled back when the function throws, committed when it returns; the function must not
 * return a promise (better-sqlite3 refuses it).
 *
 * Why not `db.transaction(fn)` per call: better-sqlite3 builds four wrapper functions and
 * defines five properties on each for every `transaction(fn)`. Made per call, that was 13–16 %
 * of a database thread's busy time in `bench:storage` (`--cpu-prof`, 2026-12-05), more than
 * the `BEGIN` and `COMMIT` themselves. A transaction function takes arguments, so one made once
 * runs any work.
 */
export interface Transactions {
  /** `BEGIN` (deferred: the write lock is taken at the first write). */
  deferred<T>(run: () => T): T;
  /** `BEGIN IMMEDIATE`: the write lock is taken at once (`busy_timeout` applies). */
  immediate<T>(run: () => T): T;
}

export function transactionsOf(db: Database.Database): Transactions {
  const transaction = db.transaction((run: () => unknown) => run());
  return {
    deferred: <T>(run: () => T) => transaction(run) as T,
    immediate: <T>(run: () => T) => transaction.immediate(run) as T,
  };
}
