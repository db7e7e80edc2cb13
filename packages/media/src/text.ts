/**
 * Collapse every run of three or more newlines (blank lines holding only spaces or tabs
 * count as empty) to exactly two, drop leading blank lines and trailing whitespace.
 * Hand-written so it stays linear on any input.
 */
export function collapseBlankLines(text: string): string {
  let out = "";
  let from = 0;
  let i = 0;
  while (i < text.length) {
    if (text.charCodeAt(i) !== 0x0a) {
      i++;
      continue;
    }
    // A run: newline, then any number of (horizontal space* newline).
    let newlines = 1;
    let j = i + 1;
    let lastNewline = i;
    while (j < text.length) {
      const c = text.charCodeAt(j);
      if (c === 0x0a) {
        newlines++;
        lastNewline = j;
      } else if (c !== 0x20 && c !== 0x09) {
        break;
      }
      j++;
    }
    if (newlines >= 3) {
      out += `${text.slice(from, i)}\n\n`;
      from = lastNewline + 1;
    }
    i = lastNewline + 1;
  }
  out += text.slice(from);
  return stripLeadingBlankLines(out).trimEnd();
}

function stripLeadingBlankLines(text: string): string {
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x0a) start = i + 1;
    else if (c !== 0x20 && c !== 0x09) break;
  }
  return text.slice(start);
}
