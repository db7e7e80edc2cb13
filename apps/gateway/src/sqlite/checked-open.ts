import { type CallFailure, DatabaseWorker, type DatabaseWorkerOptions } from "./database-worker.js";
import { checkIntegrityWithin, type OpenCheck, skippedCheck } from "./integrity.js";

/** Options of {@link openChecked}: the worker's, and how the file's damage is told. */
export interface CheckedOpenOptions<E extends Error> extends DatabaseWorkerOptions {
  /** How long the check's connection waits for another process's lock. */
  readonly busyTimeoutMs: number;
  /** How long opening waits for the check's verdict before it goes on without it. */
  readonly integrityWaitMs: number;
  /** Whether an existing file is checked first (a short command skips it). */
  readonly integrityCheck: boolean;
  /** Whether an error `revive` built says the file is damaged. */
  readonly isDamage: (error: Error) => error is E;
  /** The store's error for a file the check found damaged (its message names the way out). */
  readonly damaged: (problems: readonly string[]) => E;
}

/** A database worker opened after an integrity check, and what is known of the file's damage. */
export interface CheckedDatabase<P extends object, E extends Error> {
  readonly worker: DatabaseWorker<P>;
  /** The check at open (its `early` verdict is `undefined` when it outlasted the wait). */
  readonly check: OpenCheck;
  /**
   * Set once the file is known to be damaged: a call failed on it, or the check's verdict came
   * after the open went on; nothing heals it but moving the file aside.
   */
  readonly damage: E | undefined;
  /** Stops the check if it still runs, then closes the worker (see `DatabaseWorker.close`). */
  close(): Promise<void>;
}

/**
 * Opens a database the way the journal and the state stores do: an existing file is checked
 * first (`quick_check` in a thread of its own, waited for up to `integrityWaitMs`), and a
 * damaged one rejects with `damaged(problems)`; then its worker is started. A verdict that comes
 * later, or a call that fails with an error `isDamage` accepts, sets `damage`. Closing stops a
 * check still running, so it neither holds up the process nor reports after the close.
 */
export async function openChecked<P extends object, E extends Error>(
  options: CheckedOpenOptions<E>,
): Promise<CheckedDatabase<P, E>> {
  const { path, isDamage, damaged, revive } = options;
  const stopCheck = new AbortController();
  const check = options.integrityCheck
    ? await checkIntegrityWithin(path, {
        busyTimeoutMs: options.busyTimeoutMs,
        waitMs: options.integrityWaitMs,
        signal: stopCheck.signal,
      })
    : skippedCheck(path);
  if (check.early?.status === "damaged") throw damaged(check.early.problems);
  let damage: E | undefined;
  let worker: DatabaseWorker<P>;
  try {
    worker = await DatabaseWorker.start<P>({
      program: options.program,
      path,
      settings: options.settings,
      threadName: options.threadName,
      ...(options.closeTimeoutMs === undefined ? {} : { closeTimeoutMs: options.closeTimeoutMs }),
      revive: (failure: CallFailure) => {
        const error = revive(failure);
        if (isDamage(error)) damage ??= error;
        return error;
      },
    });
  } catch (error) {
    stopCheck.abort();
    throw error;
  }
  if (check.early === undefined) {
    void check.report.then((report) => {
      if (report.status === "damaged") damage ??= damaged(report.problems);
    });
  }
  return {
    worker,
    check,
    get damage() {
      return damage;
    },
    close: () => {
      stopCheck.abort();
      return worker.close();
    },
  };
}
