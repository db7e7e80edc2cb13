/**
 * The gateway's one escaping of text users chose (display names, chat titles) before it is
 * printed for an operator: the CLI's tables, any log line that carries such a name, and the
 * web console's Sessions page (names and the command a turn runs). A
 * name is whatever a platform account set, so it may hold terminal escapes (`\x1b[31m`
 * recolours or clears the operator's terminal), bidi overrides (U+202E shows `exe.pdf` for
 * `fdp.exe`) and line or column breaks (a newline or a tab forges a row of a table).
 */

import { UnshownCharClass, unshownChars } from "@mediagate/io";

/**
 * Characters escaped by {@link printable}: @mediagate/io's `UnshownCharClass` (C0 and C1
 * controls and DEL, the line and paragraph separators, the bidirectional formatting
 * characters) and the backslash. Other invisible characters (zero-width joiners in emoji
 * sequences) cannot reorder or break a line and are left alone.
 */
const Unprintable = new RegExp(`[\\\\${UnshownCharClass}]`, "g");

/** {@link Unprintable} but the backslash: see {@link PrintableOptions.keepBackslashes}. */
const UnprintableKeepingBackslashes = unshownChars();

/** How {@link printable} escapes. */
export interface PrintableOptions {
  /**
   * Leaves backslashes as they are (default: each written `\\`). For the web console, which
   * shows commands and task texts an operator approves or runs: there the command must read
   * as it runs (`grep 'a\|b'`, not `grep 'a\\|b'`), and an escape's one ambiguity (text that
   * spells `\u202e` reads like the escaped character) reorders nothing.
   */
  readonly keepBackslashes?: boolean | undefined;
}

/** The web console's escaping: backslashes kept ({@link PrintableOptions.keepBackslashes}). */
export const InBrowser: PrintableOptions = { keepBackslashes: true };

const Named: Readonly<Record<string, string>> = {
  "\\": "\\\\",
  "\n": "\\n",
  "\r": "\\r",
  "\t": "\\t",
};

/**
 * `text` with every character of {@link Unprintable} written as an escape: `\n`, `\r`, `\t`,
 * `\xNN` for the other controls below U+0100, `\uNNNN` for the rest, and `\\` for a
 * backslash, so an escape in the output always stands for that one character and never
 * for text the user typed. Everything else is kept as it is.
 */
export function printable(text: string, options: PrintableOptions = {}): string {
  const unprintable =
    options.keepBackslashes === true ? UnprintableKeepingBackslashes : Unprintable;
  return text.replace(unprintable, (char) => {
    const named = Named[char];
    if (named !== undefined) return named;
    const code = char.charCodeAt(0);
    return code < 0x100
      ? `\\x${code.toString(16).padStart(2, "0")}`
      : `\\u${code.toString(16).padStart(4, "0")}`;
  });
}

/** C0 controls but tab and newline, DEL and the C1 controls: what drives a terminal. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: escaping them is the point
const TerminalControls = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * Chat text as the console prints it on the operator's terminal: line breaks and tabs as they
 * are (a CR before a line feed dropped, as a terminal shows it anyway), every other control
 * written as {@link printable} writes it (`\x1b`, `\r`, `\x9b`), and all else, backslashes
 * included, as written. A reply is whatever a command printed (`cat` of a file another chat
 * user left in a shared container), and its escapes must not set the operator's clipboard
 * (OSC 52), title or colours, clear the screen, or rewrite a line with a lone CR.
 */
export function forTerminal(text: string): string {
  return text
    .replaceAll("\r\n", "\n")
    .replace(TerminalControls, (char) => printable(char, InBrowser));
}
