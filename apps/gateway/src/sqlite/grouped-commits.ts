import type Database from "better-sqlite3";
import { transactionsOf } from "./transactions.js";

/**
 * What a database-worker program offers so that the calls of one batch share one commit
 * (worker-thread.ts): a program without it runs every call as its own transaction.
 *
 * Why: every commit writes the pages it changed to the write-ahead log again. Measured on the
 * journal, one message's six calls as the gateway makes them (record, started, addReply,
 * attempt, step, closeReply), 4,800 messages on the 2-core dev machine: 0.29–0.30 ms of CPU per
 * message with a commit per call, 0.18–0.20 with a commit per three calls (the batches the
 * gateway sends average about 2.8 calls), 0.16 per six.
 */
export interface GroupedCommits {
  /** Whether `operation` may share a transaction (not one that closes the database). */
  groupable(operation: string): boolean;
  /** Runs `run` in one immediate transaction, committed when it returns, rolled back if it throws. */
  inOneTransaction(run: () => void): void;
  /**
   * Runs `call` as one unit inside that transaction (a savepoint): when it throws, none of its
   * writes stay and the other calls' do.
   */
  atomically<T>(call: () => T): T;
  /**
   * Whether the transaction is still open. SQLite ends it by itself on some errors (a full
   * disk, an I/O error); then nothing of it will be committed.
   */
  readonly inTransaction: boolean;
}

/**
 * {@link GroupedCommits} over `db`. `alone` names the program's operations that must not run
 * inside a shared transaction: every other one is a synchronous unit of plain reads and writes
 * (SQLite refuses a close, a VACUUM or a checkpoint inside a transaction; name any such
 * operation a program gains).
 */
export function groupedCommits(db: Database.Database, alone: ReadonlySet<string>): GroupedCommits {
  const transactions = transactionsOf(db);
  return {
    groupable: (operation) => !alone.has(operation),
    inOneTransaction: (run) => transactions.immediate(run),
    // Inside an open transaction, better-sqlite3 makes a transaction function a savepoint.
    atomically: (call) => transactions.deferred(call),
    get inTransaction() {
      return db.inTransaction;
    },
  };
}
