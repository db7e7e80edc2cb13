/**
 * The characters text shown to a person must not carry as they are, as the body of a regular
 * expression character class: C0 and C1 controls and DEL (a terminal obeys them), the line
 * and paragraph separators (they break a line), and the bidirectional formatting characters,
 * marks, embeddings, overrides and isolates (U+202E shows `report<U+202E>txt.exe` as
 * `reportexe.txt`). Other invisible characters (the zero-width joiners of emoji sequences)
 * cannot reorder or break a line and are not in it. The gateway's `printable()` escapes them
 * for operators; a chat notice's file name leaves them out (@mediagate/media).
 */
export const UnshownCharClass =
  "\\u0000-\\u001f\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069";

/** A global expression matching each of {@link UnshownCharClass}'s characters. */
export function unshownChars(): RegExp {
  return new RegExp(`[${UnshownCharClass}]`, "g");
}
