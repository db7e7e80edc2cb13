/** A line that opens or closes a fenced code block (up to 3 spaces of indent). */
const FenceLine = /^ {0,3}(`{3,}|~{3,})/;
/** The marker `@mediagate/media` extracts tags by (docs/media.md). */
const MediaMarker = "MEDIA:";
/** ASCII punctuation: CommonMark and Discord take a backslash before any of it as literal. */
const Punctuation = /[!-/:-@[-`{-~]/g;

/**
 * `markdown` with every line that holds a `MEDIA:` marker made literal: its punctuation
 * backslash-escaped, so no emphasis, code span or link can hide part of a tag the gateway
 * did not deliver (the user sees it as the agent wrote it). Lines inside fenced code blocks
 * are literal already and stay as they are; so do lines indented 4 spaces or more, which
 * Markdown may show as code, where a backslash would show.
 */
export function protectMediaLines(markdown: string): string {
  if (!markdown.includes(MediaMarker)) return markdown;
  let fence: string | undefined;
  return markdown
    .split("\n")
    .map((line) => {
      const marker = FenceLine.exec(line)?.[1];
      if (marker !== undefined) {
        if (fence === undefined) fence = marker;
        else if (marker[0] === fence[0] && marker.length >= fence.length) fence = undefined;
        return line;
      }
      if (fence !== undefined || !line.includes(MediaMarker) || /^ {4}|^\t/.test(line)) {
        return line;
      }
      return line.replace(Punctuation, (char) => `\\${char}`);
    })
    .join("\n");
}
