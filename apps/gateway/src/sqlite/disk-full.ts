import { codeOf, findInCauses } from "../error-causes.js";

/**
 * SQLite result codes, errno codes and PostgreSQL SQLSTATEs that mean the disk (or the file
 * system's quota) is full: `53100` is PostgreSQL's `disk_full`, the server's disk refusing a
 * write, which the PostgreSQL store reports as the same `full` condition as SQLite's
 * (docs/store.md).
 */
const FullCodes: ReadonlySet<string> = new Set(["SQLITE_FULL", "ENOSPC", "EDQUOT", "53100"]);

/** Whether `code` (a SQLite result code, an errno code or a SQLSTATE) means a full disk. */
export function isDiskFullCode(code: string | undefined): boolean {
  return code !== undefined && FullCodes.has(code);
}

/** Whether `error` or one of its causes carries a disk-full code. */
export function isDiskFull(error: unknown): boolean {
  return findInCauses(error, (link) => isDiskFullCode(codeOf(link))) !== undefined;
}
