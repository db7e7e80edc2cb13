/** SQLite result codes and errno codes that mean the disk (or the file system's quota) is full. */
const FullCodes: ReadonlySet<string> = new Set(["SQLITE_FULL", "ENOSPC", "EDQUOT"]);

/** Whether `code` (a SQLite result code or an errno code) means a full disk. */
export function isDiskFullCode(code: string | undefined): boolean {
  return code !== undefined && FullCodes.has(code);
}

/** Whether `error` or one of its causes carries a disk-full code. */
export function isDiskFull(error: unknown): boolean {
  for (let at = error, depth = 0; at instanceof Error && depth < 8; at = at.cause, depth++) {
    if ("code" in at && typeof at.code === "string" && isDiskFullCode(at.code)) return true;
  }
  return false;
}
