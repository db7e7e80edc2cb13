import { MediagateError } from "@mediagate/io/mediagate-error";
import { damagedWayOut, isDamaged } from "../sqlite/damage.js";
import { isDiskFull } from "../sqlite/disk-full.js";

/**
 * The state database could not be opened, read or written; `code` tells a full disk, a
 * damaged file and any other failure apart.
 */
export class StateStoreError extends MediagateError {
  override readonly name = "StateStoreError";
  readonly code: "MG_STATE_DISK_FULL" | "MG_STATE_DAMAGED" | "MG_STATE_FAILED";
  /** What the store was doing: `open`, `append`, `load`, `rotate`, … */
  readonly operation: string;
  /** Path of the database file. */
  readonly path: string;
  /** What went wrong, without the path and operation the message adds. */
  readonly reason: string;
  /**
   * The disk holding the database is full (`SQLITE_FULL`, `ENOSPC`): nothing of the failed
   * call was saved, and it works again once space is freed.
   */
  readonly full: boolean;
  /**
   * The file is damaged (`SQLITE_CORRUPT`, `SQLITE_NOTADB`, or the check at open found so): no
   * retry heals it; the message names the way out (`mediagate db move-aside`).
   */
  readonly damaged: boolean;

  constructor(operation: string, path: string, reason: string, options?: { cause?: unknown }) {
    const full = isDiskFull(options?.cause);
    const damaged = !full && isDamaged(options?.cause);
    super(
      full
        ? `state database ${path}: ${operation} failed: the disk is full; free space (${reason})`
        : damaged
          ? `the state database ${path} is damaged (${operation}: ${reason}); ${damagedWayOut("state", path)}`
          : `state database ${path}: ${operation} failed: ${reason}`,
      options,
    );
    this.code = full ? "MG_STATE_DISK_FULL" : damaged ? "MG_STATE_DAMAGED" : "MG_STATE_FAILED";
    this.operation = operation;
    this.path = path;
    this.reason = reason;
    this.full = full;
    this.damaged = damaged;
  }
}

/**
 * The database's schema version (`PRAGMA user_version`) is newer than this build knows,
 * typically after a downgrade. The file is left untouched.
 */
export class StateSchemaError extends MediagateError {
  override readonly name = "StateSchemaError";
  readonly code = "MG_STATE_SCHEMA_NEWER";
  readonly found: number;
  readonly supported: number;

  constructor(found: number, supported: number) {
    super(
      `state database schema version ${found} is newer than this mediagate supports (${supported}); ` +
        "upgrade mediagate or move the state.db aside",
    );
    this.found = found;
    this.supported = supported;
  }
}
