import { codeOf, findInCauses } from "../error-causes.js";

/** SQLite result codes and errno codes that mean the disk (or the file system's quota) is full. */
const FullCodes: ReadonlySet<string> = new Set(["SQLITE_FULL", "ENOSPC", "EDQUOT"]);

/** Whether `code` (a SQLite result code or an errno code) means a full disk. */
export function isDiskFullCode(code: string | undefined): boolean {
  return code !== undefined && FullCodes.has(code);
}

/** Whether `error` or one of its causes carries a disk-full code. */
export function isDiskFull(error: unknown): boolean {
  return findInCauses(error, (link) => isDiskFullCode(codeOf(link))) !== undefined;
}
