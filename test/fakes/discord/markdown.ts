/**
 * A message's content as the Discord client shows it: a backslash before ASCII punctuation
 * escapes it (Discord's Markdown), so `\*slow\*` shows `*slow*`. A gateway profile with
 * `format: plain` escapes Markdown on purpose (docs/formatting.md); tests that check what a
 * user reads compare this, not the wire text.
 */
export function asShown(content: string): string {
  return content.replace(/\\([!-/:-@[-`{-~])/g, "$1");
}
