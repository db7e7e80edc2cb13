/**
 * An error's `cause` chain, walked in one place. Loaded by the SQLite worker programs too
 * (through sqlite/damage.ts), so it imports nothing.
 */

/** How deep a `cause` chain is followed: a cycle, or a chain no library builds, ends there. */
export const MaxCauseDepth = 8;

/**
 * The first of `error` and its causes (each one's `cause`, at most {@link MaxCauseDepth} links
 * deep) that `accepts`, or `undefined`. Any object is a link (a cause need not be an `Error`);
 * the walk ends at the first value that is not one.
 */
export function findInCauses<T extends object>(
  error: unknown,
  accepts: (link: object) => link is T,
): T | undefined;
export function findInCauses(
  error: unknown,
  accepts: (link: object) => boolean,
): object | undefined;
export function findInCauses(
  error: unknown,
  accepts: (link: object) => boolean,
): object | undefined {
  let link = error;
  for (let depth = 0; depth < MaxCauseDepth; depth++) {
    if (typeof link !== "object" || link === null) return undefined;
    if (accepts(link)) return link;
    link = (link as { cause?: unknown }).cause;
  }
  return undefined;
}

/** `link`'s `code` when it is a string (SQLite's result codes and Node's errno codes are). */
export function codeOf(link: object): string | undefined {
  const code = (link as { code?: unknown }).code;
  return typeof code === "string" ? code : undefined;
}
