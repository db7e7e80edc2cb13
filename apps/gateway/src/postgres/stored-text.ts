/**
 * The one rule for NUL in stored text, on both stores (docs/store.md): PostgreSQL's `text`
 * refuses U+0000 (`invalid byte sequence for encoding "UTF8": 0x00`) where SQLite keeps it, so
 * every string a statement of the PostgreSQL store or of the SQLite state database writes has
 * each NUL replaced by U+FFFD (the replacement character), and the SQLite journal does the same
 * to the one free text it stores as such (a reply's last error), so the two stores hold the
 * same text. What is stored as JSON (conversation messages, approvals' bodies, the journal's
 * messages, replies' texts and plans) carries a NUL escaped (`\u0000`) and gets it back
 * exactly on both.
 */

const Nul = /\0/g;

/** `text` with each NUL replaced by U+FFFD. */
export function storableText(text: string): string {
  return text.includes("\0") ? text.replace(Nul, "\uFFFD") : text;
}

/**
 * A statement's parameters with {@link storableText} applied to every string among them, in
 * arrays and in plain objects (named parameters) too; other values (numbers, buffers, `null`)
 * as they are.
 */
export function storableParams<T>(params: T): T {
  if (typeof params === "string") return storableText(params) as T;
  if (Array.isArray(params)) {
    return (params.some(holdsNul) ? params.map(storableParams) : params) as T;
  }
  if (isPlainObject(params) && Object.values(params).some(holdsNul)) {
    return Object.fromEntries(
      Object.entries(params).map(([key, value]) => [key, storableParams(value)]),
    ) as T;
  }
  return params;
}

function holdsNul(value: unknown): boolean {
  if (typeof value === "string") return value.includes("\0");
  if (Array.isArray(value)) return value.some(holdsNul);
  return isPlainObject(value) && Object.values(value).some(holdsNul);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const prototype = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}
