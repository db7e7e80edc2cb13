import type { Token } from "marked";

/** The visible text of inline tokens, their markup dropped (a table cell, an image's alt). */
export function plainOf(tokens: readonly Token[] | undefined): string {
  let out = "";
  for (const token of tokens ?? []) {
    if ("tokens" in token && Array.isArray(token.tokens) && token.tokens.length > 0) {
      out += plainOf(token.tokens);
    } else if (token.type === "br") {
      out += "\n";
    } else if ("text" in token && typeof token.text === "string") {
      out += token.text;
    }
  }
  return out;
}
