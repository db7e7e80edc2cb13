import { randomBytes } from "node:crypto";
import { Defaults } from "./defaults.js";

/** Invisible format characters: bidi overrides and isolates, zero-width characters, BOM. */
const Invisible = /\p{Cf}/gu;
/** Runs of anything but letters, marks, digits and `. _ + -` (shell metacharacters, spaces, controls). */
const Unsafe = /[^\p{L}\p{M}\p{N}._+-]+/gu;
/** Characters a name must not start with: hidden files and command-line options. */
const UnsafeStart = /^[.-]+/;
/** An extension worth keeping when the name is cut: a dot and 1–16 letters or digits. */
const Extension = /\.[\p{L}\p{N}]{1,16}$/u;

/**
 * The name a file a user sent gets in the inbox (docs/sandbox.md, "Files users send"): the last
 * component of `original` (after `/` or `\`), NFC-normalized, with invisible format characters
 * (RTL/LTR overrides and isolates, zero-width characters) removed, every run of characters
 * other than letters, combining marks, digits, `.`, `_`, `+` and `-` (spaces, controls, shell
 * metacharacters, quotes) replaced by one `_`, leading dots and dashes removed (no hidden
 * files, nothing read as an option), trailing dots removed, and cut to at most
 * `Defaults.inboxNameMaxBytes` UTF-8 bytes keeping its extension. `file` when nothing is left.
 */
export function inboxFileName(original: string): string {
  const last =
    original
      .normalize("NFC")
      .split(/[/\\]/)
      .filter((part) => part.length > 0)
      .at(-1) ?? "";
  const cleaned = last
    .replace(Invisible, "")
    .replace(Unsafe, "_")
    .replace(UnsafeStart, "")
    .replace(/\.+$/, "");
  return fit(cleaned.length > 0 ? cleaned : "file", "");
}

/**
 * The `n`th name to try for a file whose inbox name is `name` (from {@link inboxFileName}):
 * `name` itself for 1, then `stem-2.ext`, `stem-3.ext`, … — cut like `name` so it still fits
 * in `Defaults.inboxNameMaxBytes` bytes.
 */
export function numberedName(name: string, n: number): string {
  return n <= 1 ? name : fit(name, `-${n}`);
}

/** How many numbered names (`name`, then `-2` … `-100`) are tried before random ones. */
export const NumberedNames = 100;
/** Random names tried once the numbered ones are taken; the first is practically always free. */
const RandomNames = 3;

/**
 * Every name a file whose inbox name is `name` may get, in the order they are tried: the
 * {@link NumberedNames} numbered ones ({@link numberedName}), then a few
 * `stem-<16 random hex>.ext`, cut the same way. The inbox is shared by every session of the
 * slot, so one session can take all the numbered names of `photo.jpg`; the random ones cannot
 * be taken ahead, so no session can make another's file unsaveable.
 */
export function candidateNames(name: string): string[] {
  const numbered = Array.from({ length: NumberedNames }, (_, i) => numberedName(name, i + 1));
  const random = Array.from({ length: RandomNames }, () =>
    fit(name, `-${randomBytes(8).toString("hex")}`),
  );
  return [...numbered, ...random];
}

/** `name` with `suffix` put before its extension, the stem cut so the whole fits. */
function fit(name: string, suffix: string): string {
  const match = Extension.exec(name);
  const extension = match !== null && match.index > 0 ? match[0] : "";
  const stem = name.slice(0, name.length - extension.length);
  const room = Defaults.inboxNameMaxBytes - byteLength(extension) - byteLength(suffix);
  const cut = cutToBytes(stem, room).replace(/\.+$/, "");
  return `${cut.length > 0 ? cut : "file"}${suffix}${extension}`;
}

/** The longest prefix of `text` of at most `max` UTF-8 bytes, cut between code points. */
function cutToBytes(text: string, max: number): string {
  if (byteLength(text) <= max) return text;
  let out = "";
  let used = 0;
  for (const char of text) {
    const size = byteLength(char);
    if (used + size > max) break;
    out += char;
    used += size;
  }
  return out;
}

function byteLength(text: string): number {
  return Buffer.byteLength(text, "utf8");
}
