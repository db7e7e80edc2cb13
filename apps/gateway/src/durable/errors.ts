import { isDiskFullCode } from "../sqlite/disk-full.js";

/** What a failed journal operation means for the message or reply it was about. */
const Consequences: Readonly<Record<string, string>> = {
  open: "the gateway cannot record messages until it can open the journal",
  record: "the message was not confirmed and will be handled once it is saved",
  addReply: "the reply was not recorded for delivery",
  step: "the delivered step was not recorded; a resumed delivery may repeat it",
  sync: "the messages recorded since the last sync were not confirmed and are offered again",
};

/** Fields of a {@link StorageError}. */
export interface StorageErrorInit {
  /** The journal method that failed (`record`, `addReply`, …; `open`, `close`). */
  readonly operation: string;
  /** The database file. */
  readonly path: string;
  /** What went wrong, as SQLite or the file system said it. */
  readonly reason: string;
  /** The SQLite result code or errno code, if known. */
  readonly code?: string | undefined;
  readonly cause?: unknown;
}

/**
 * The journal (`journal.db`) could not be read or written. `full` is set when the disk
 * holding it is full: nothing of the failed operation was saved (SQLite rolled it back), and
 * the same call works again once space is freed. The message says what failed and what to do;
 * it holds no message text or token.
 */
export class StorageError extends Error {
  override readonly name = "StorageError";
  readonly operation: string;
  readonly path: string;
  /** The disk (or quota) is full (`SQLITE_FULL`, `ENOSPC`, `EDQUOT`). */
  readonly full: boolean;
  readonly code: string | undefined;
  readonly reason: string;

  constructor(init: StorageErrorInit) {
    const full = isDiskFullCode(init.code);
    const consequence = Consequences[init.operation] ?? "the change was not saved";
    super(
      full
        ? `journal ${init.operation} failed: the disk holding ${init.path} is full; free space; ${consequence}`
        : `journal ${init.path}: ${init.operation} failed: ${init.reason}; ${consequence}`,
      { cause: init.cause },
    );
    this.operation = init.operation;
    this.path = init.path;
    this.full = full;
    this.code = init.code;
    this.reason = init.reason;
  }
}
