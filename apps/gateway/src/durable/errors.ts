import { MediagateError } from "@mediagate/io/mediagate-error";
import { damagedWayOut, isDamagedCode } from "../sqlite/damage.js";
import { isDiskFullCode } from "../sqlite/disk-full.js";

/** What a failed journal operation means for the message or reply it was about. */
const Consequences: Readonly<Record<string, string>> = {
  open: "the gateway cannot record messages until it can open the journal",
  record: "the message was not confirmed and will be handled once it is saved",
  recorded: "the message was not confirmed and will be handled once the journal can be read",
  addReply: "the reply was not recorded for delivery",
  step: "the delivered step was not recorded; a resumed delivery may repeat it",
  sync: "the messages recorded since the last sync were not confirmed and are offered again",
};

/** The same, when the journal is damaged: nothing heals by itself, so nothing is promised. */
const DamagedConsequences: Readonly<Record<string, string>> = {
  open: "the gateway cannot run on it",
  record: "the message was not confirmed and cannot be recorded until the journal is replaced",
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
  readonly systemCode?: string | undefined;
  readonly cause?: unknown;
}

/**
 * The journal (`journal.db`) could not be read or written. `full` is set when the disk
 * holding it is full: nothing of the failed operation was saved (SQLite rolled it back), and
 * the same call works again once space is freed. `damaged` is set when the file itself is
 * damaged: no retry heals it, and the message names the way out (`mediagate db move-aside`).
 * `code` tells the three apart. The message says what failed and what to do; it holds no
 * message text or token.
 */
export class StorageError extends MediagateError {
  override readonly name = "StorageError";
  readonly code: "MG_JOURNAL_DISK_FULL" | "MG_JOURNAL_DAMAGED" | "MG_JOURNAL_FAILED";
  readonly operation: string;
  readonly path: string;
  /** The disk (or quota) is full (`SQLITE_FULL`, `ENOSPC`, `EDQUOT`). */
  readonly full: boolean;
  /** The file is damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, or the check at open found so). */
  readonly damaged: boolean;
  /** The SQLite result code or errno code, if known. */
  readonly systemCode: string | undefined;
  readonly reason: string;

  constructor(init: StorageErrorInit) {
    const full = isDiskFullCode(init.systemCode);
    const damaged = isDamagedCode(init.systemCode);
    super(messageOf(init, full, damaged), { cause: init.cause });
    this.code = full
      ? "MG_JOURNAL_DISK_FULL"
      : damaged
        ? "MG_JOURNAL_DAMAGED"
        : "MG_JOURNAL_FAILED";
    this.operation = init.operation;
    this.path = init.path;
    this.full = full;
    this.damaged = damaged;
    this.systemCode = init.systemCode;
    this.reason = init.reason;
  }
}

function messageOf(init: StorageErrorInit, full: boolean, damaged: boolean): string {
  const { operation, path, reason } = init;
  if (full) {
    const consequence = Consequences[operation] ?? "the change was not saved";
    return `journal ${operation} failed: the disk holding ${path} is full; free space; ${consequence}`;
  }
  if (damaged) {
    const consequence = DamagedConsequences[operation] ?? "the change was not saved";
    return `the journal ${path} is damaged (${operation}: ${reason}); ${consequence}; ${damagedWayOut("journal", path)}`;
  }
  const consequence = Consequences[operation] ?? "the change was not saved";
  return `journal ${path}: ${operation} failed: ${reason}; ${consequence}`;
}

/**
 * A merged message (an album) was not recorded because some of its receipt ids were recorded
 * with another message (entry `recordedAs`) and `unrecorded` were not. Nothing is confirmed;
 * its channel asks which receipts are recorded and hands on the rest as a message of its own.
 */
export class PartlyRecordedError extends MediagateError {
  override readonly name = "PartlyRecordedError";
  readonly code = "MG_JOURNAL_PARTLY_RECORDED";

  constructor(
    readonly receiptId: string,
    readonly unrecorded: readonly string[],
    readonly recordedAs: number,
  ) {
    super(
      `message ${receiptId} was not recorded: some of its items were, with entry ${recordedAs}, and ${unrecorded.join(", ")} were not; they are offered again on their own`,
    );
  }
}
