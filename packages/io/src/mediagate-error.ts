/**
 * A stable error code: `MG_<AREA>_<WHAT>` in capitals and digits (`MG_CONFIG_INVALID`,
 * `MG_JOURNAL_DAMAGED`), what an operator looks up in docs/errors.md. A code keeps its
 * meaning once released; a new case gets a new code.
 */
export type ErrorCode = `MG_${string}`;

const CodePattern = /^MG_[A-Z0-9_]+$/;

/** Whether `value` is an {@link ErrorCode} (and not an errno or SQLite code such as `ENOSPC`). */
export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && CodePattern.test(value);
}

/**
 * The base of every mediagate error class, the way fastify's errors carry `FST_ERR_*`: a
 * stable {@link ErrorCode} as `code`, an own field, so the log line's `err` shows it beside
 * `type` and `message`. A subclass is named `…Error`, keeps `name` equal to its class name, and
 * sets `code` to one literal, or one per case an operator tells apart (a full disk, a damaged
 * file). docs/errors.md lists every code with what to do; a test keeps the two in step.
 */
export abstract class MediagateError extends Error {
  abstract readonly code: ErrorCode;
}

/** The code of `error` when it carries one (a mediagate error, or one rebuilt from it); else undefined. */
export function errorCodeOf(error: unknown): ErrorCode | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  return isErrorCode(error.code) ? error.code : undefined;
}
