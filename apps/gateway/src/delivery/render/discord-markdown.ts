import { Lexer, type Tokens } from "marked";
import { flattenTable } from "./tables.js";

/** Discord shows headings of these depths (`#`, `##`, `###`); deeper ones become bold. */
const DiscordMaxHeadingDepth = 3;

/**
 * Model Markdown as Discord shows it (docs/formatting.md): passed through as written, but
 * each top-level table flattened ({@link flattenTable}; a grid in a code block, or records
 * with a bold title) and headings deeper than `###` made bold lines. The rest of the text is
 * the model's own, byte for byte.
 */
export function markdownForDiscord(markdown: string, maxGridWidth: number): string {
  let out = "";
  for (const token of Lexer.lex(markdown)) {
    if (token.type === "table") {
      out += `${table(token as Tokens.Table, maxGridWidth)}${trailingNewlines(token.raw)}`;
    } else if (
      token.type === "heading" &&
      (token as Tokens.Heading).depth > DiscordMaxHeadingDepth
    ) {
      out += `**${(token as Tokens.Heading).text.trim()}**${trailingNewlines(token.raw)}`;
    } else {
      out += token.raw;
    }
  }
  return out;
}

function trailingNewlines(raw: string): string {
  return /\n*$/.exec(raw)?.[0] ?? "";
}

function table(token: Tokens.Table, maxGridWidth: number): string {
  const flat = flattenTable(token, maxGridWidth);
  if (flat.kind === "grid") return `\`\`\`\n${flat.text.replaceAll("```", "`\u200b``")}\n\`\`\``;
  return flat.records
    .map((record) =>
      [
        `**${escapeInline(record.title)}**`,
        ...record.fields.map((f) => `${escapeInline(f.name)}: ${escapeInline(f.value)}`),
      ].join("\n"),
    )
    .join("\n\n");
}

/** Cell text is plain (its markup was dropped): shown literally. */
function escapeInline(text: string): string {
  return text.replace(/[\\*_~`|]/g, (char) => `\\${char}`);
}
