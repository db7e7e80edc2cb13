/** Character classes of the MEDIA scanner, on UTF-16 code units. */

/** Length of the run of `char` starting at `from`, stopping at `end`. */
export function runLength(text: string, from: number, end: number, char: number): number {
  let i = from;
  while (i < end && text.charCodeAt(i) === char) i++;
  return i - from;
}

/** Only spaces and tabs in `[from, end)`. */
export function isBlank(text: string, from: number, end: number): boolean {
  for (let i = from; i < end; i++) if (!isHorizontalSpace(text.charCodeAt(i))) return false;
  return true;
}

export function isHorizontalSpace(c: number): boolean {
  return c === 0x20 || c === 0x09;
}

/** ASCII whitespace, NBSP and the ideographic space. */
export function isSpace(c: number): boolean {
  return c === 0x20 || (c >= 0x09 && c <= 0x0d) || c === 0xa0 || c === 0x3000;
}

/** `[A-Za-z0-9_]`. */
export function isWordChar(c: number): boolean {
  return (
    (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f
  );
}

/** CJK and fullwidth punctuation: never part of a bare path, so it ends one. */
export function isCjkStop(c: number): boolean {
  return (
    (c >= 0x3000 && c <= 0x303f) ||
    (c >= 0xff01 && c <= 0xff0f) ||
    (c >= 0xff1a && c <= 0xff20) ||
    (c >= 0xff3b && c <= 0xff40) ||
    (c >= 0xff5b && c <= 0xff65)
  );
}
