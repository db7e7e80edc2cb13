import { createHash } from "node:crypto";

const PathUnsafe = /[^A-Za-z0-9._-]/g;
const MaxVerbatimLength = 128;
const MaxCleanedLength = 115;

/**
 * Turns a slot key into one directory name (docs/sandbox.md). Characters outside `[A-Za-z0-9._-]`
 * become `_`. A value that needed no change, is 1–128 chars, is not `.`/`..` and does not
 * end in `.` is kept verbatim; anything else becomes the cleaned value cut to 115 chars and
 * trimmed of leading/trailing `.`/`_` (or `task` when nothing is left), then `-` and the
 * first 12 hex chars of the sha256 of the original value, so distinct keys stay distinct.
 */
export function sanitizeForPath(value: string): string {
  const cleaned = value.replace(PathUnsafe, "_");
  if (
    cleaned === value &&
    value.length > 0 &&
    value.length <= MaxVerbatimLength &&
    !value.endsWith(".") // also rules out "." and ".."
  ) {
    return value;
  }
  const base = cleaned
    .slice(0, MaxCleanedLength)
    .replace(/^[._]+/, "")
    .replace(/[._]+$/, "");
  const hash = createHash("sha256").update(value).digest("hex").slice(0, 12);
  return `${base.length > 0 ? base : "task"}-${hash}`;
}
