import { MaxCauseDepth } from "./error-causes.js";

/** Fields never copied into a summary: a URL may carry a token (Discord's interaction routes do). */
const Withheld = new Set(["message", "stack", "cause", "url"]);

/**
 * A log-safe view of `error` for a log line's `err`: an object of the same prototype (pino names
 * it by its constructor, as it would the error) with its message, stack, and its own fields
 * whose values are strings, numbers or booleans (its name, a code, a status, the step that
 * failed, a path), its `cause` summarised the same way. Fields that hold objects are left out:
 * pino's own serializer copies every field, and a library's error can carry what must not reach
 * a log (discord.js's `DiscordAPIError` holds the whole request body, message text and
 * attachments included, and its URL; grammY's `GrammyError` the payload). A value that is not
 * an object is returned as it is.
 */
export function errorSummary(error: unknown): unknown {
  return summaryOf(error, 0);
}

function summaryOf(error: unknown, depth: number): unknown {
  if (typeof error === "bigint" || typeof error === "symbol") return String(error);
  if (typeof error !== "object" || error === null) return error;
  const summary = Object.create(Object.getPrototypeOf(error) as object | null) as object;
  const set = (key: string, value: unknown, enumerable = true) =>
    Object.defineProperty(summary, key, { value, enumerable, writable: true, configurable: true });
  const { message, stack, cause } = error as {
    message?: unknown;
    stack?: unknown;
    cause?: unknown;
  };
  set("message", typeof message === "string" ? message : "", false);
  if (typeof stack === "string") set("stack", stack, false);
  for (const [key, value] of Object.entries(error)) {
    if (Withheld.has(key)) continue;
    if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
      set(key, value);
    }
  }
  if (cause !== undefined && depth + 1 < MaxCauseDepth) set("cause", summaryOf(cause, depth + 1));
  return summary;
}
