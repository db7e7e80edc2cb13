import { Lexer, type Token, type Tokens } from "marked";
import type { EntityType, FormattedText, TextEntity } from "./formatted-text.js";
import { sortEntities } from "./formatted-text.js";
import { plainOf } from "./inline-text.js";
import { flattenTable } from "./tables.js";

/** Options of {@link markdownToEntities}. */
export interface EntityRenderOptions {
  /** A table whose aligned columns fit this many characters is a monospace block. */
  readonly maxGridWidth: number;
}

/** Link schemes Telegram accepts in a `text_link`; any other link shows as `text (url)`. */
const LinkSchemes = /^(https?:\/\/|tg:\/\/)/i;
/** A code block's language as Telegram takes it in `class="language-…"`. */
const Language = /^[\w#+.-]{1,32}$/;
const HorizontalRule = "──────────";

type InlineStyle = { readonly type: EntityType; readonly url?: string | undefined; start: number };

/**
 * Renders Markdown (CommonMark + GFM, parsed by `marked`) into text and Telegram entities
 * (docs/formatting.md): emphasis, strikethrough, inline code, code blocks with their
 * language, links, quotes; headings are bold; lists are bullet or number lines, nested
 * ones indented; tables are flattened ({@link flattenTable}); raw HTML is text.
 *
 * Telegram's nesting rules are kept by construction: a code span never sits inside another
 * entity (the styles around it are closed before it and opened again after it; inside a
 * link it is plain link text), and a quote holds no code (its code shows as plain text).
 */
export function markdownToEntities(markdown: string, options: EntityRenderOptions): FormattedText {
  const builder = new EntityBuilder(options);
  builder.blocks(Lexer.lex(markdown), "", false);
  return builder.result();
}

class EntityBuilder {
  private out = "";
  private readonly entities: TextEntity[] = [];
  private readonly styles: InlineStyle[] = [];
  private quoteDepth = 0;
  /** How many newlines `out` ends with. */
  private trailingNewlines = 0;

  constructor(private readonly options: EntityRenderOptions) {}

  result(): FormattedText {
    const text = this.out.trimEnd();
    const entities = this.entities
      .map((e) => ({ ...e, length: Math.min(e.length, text.length - e.offset) }))
      .filter((e) => e.length > 0);
    return { text, entities: sortEntities(entities) };
  }

  /** Starts a block: after a blank line at top level, after a line break inside a list. */
  private startBlock(tight: boolean): void {
    if (this.out === "") return;
    // Reading the end of `out` would flatten the string on every block (quadratic on a long
    // reply): the builder counts its trailing newlines instead.
    if (this.trailingNewlines > 0) {
      this.out = this.out.slice(0, this.out.length - this.trailingNewlines);
      this.trailingNewlines = 0;
    }
    this.append(tight ? "\n" : "\n\n");
  }

  private add(type: EntityType, start: number, extra: Partial<TextEntity> = {}): void {
    const length = this.out.length - start;
    if (length > 0) this.entities.push({ type, offset: start, length, ...extra });
  }

  blocks(tokens: readonly Token[], indent: string, tight: boolean): void {
    for (const token of tokens) this.block(token, indent, tight);
  }

  private block(token: Token, indent: string, tight: boolean): void {
    switch (token.type) {
      case "space":
      case "def":
        return;
      case "paragraph":
      case "text": {
        this.startBlock(tight);
        const t = token as Tokens.Paragraph | Tokens.Text;
        if ("tokens" in t && t.tokens !== undefined) this.inlines(t.tokens);
        else this.text(t.text);
        return;
      }
      case "heading": {
        this.startBlock(tight);
        const start = this.out.length;
        this.inlines((token as Tokens.Heading).tokens);
        this.add("bold", start);
        return;
      }
      case "code": {
        this.startBlock(tight);
        const code = token as Tokens.Code;
        const start = this.out.length;
        this.append(code.text);
        if (this.quoteDepth > 0) return;
        const language = code.lang?.trim().split(/\s+/)[0];
        this.add(
          "pre",
          start,
          language !== undefined && Language.test(language) ? { language } : {},
        );
        return;
      }
      case "blockquote": {
        this.startBlock(tight);
        const start = this.out.length;
        this.quoteDepth++;
        this.blocks((token as Tokens.Blockquote).tokens, "", tight);
        this.quoteDepth--;
        // Telegram has no quote in a quote: the outer one stands for both.
        if (this.quoteDepth === 0) this.add("blockquote", start);
        return;
      }
      case "list":
        this.list(token as Tokens.List, indent, tight);
        return;
      case "table":
        this.table(token as Tokens.Table, tight);
        return;
      case "hr":
        this.startBlock(tight);
        this.append(HorizontalRule);
        return;
      case "html":
        this.startBlock(tight);
        this.text((token as Tokens.HTML).text.replace(/\n+$/, ""));
        return;
      default:
        if ("text" in token && typeof token.text === "string") {
          this.startBlock(tight);
          this.text(token.text);
        }
    }
  }

  private list(list: Tokens.List, indent: string, tight: boolean): void {
    const first = typeof list.start === "number" ? list.start : 1;
    list.items.forEach((item, index) => {
      this.startBlock(index === 0 ? tight : !list.loose);
      const marker = list.ordered ? `${first + index}. ` : "• ";
      const box = item.task ? (item.checked === true ? "☑ " : "☐ ") : "";
      this.append(`${indent}${marker}${box}`);
      const inner = `${indent}   `;
      let opened = false;
      for (const child of item.tokens) {
        if (child.type === "checkbox") continue;
        if (!opened && (child.type === "text" || child.type === "paragraph")) {
          // The item's first line follows its marker.
          const t = child as Tokens.Text;
          if (t.tokens !== undefined) this.inlines(t.tokens);
          else this.text(t.text);
          opened = true;
          continue;
        }
        opened = true;
        this.block(child, inner, true);
      }
    });
  }

  private table(table: Tokens.Table, tight: boolean): void {
    this.startBlock(tight);
    const flat = flattenTable(table, this.options.maxGridWidth);
    if (flat.kind === "grid") {
      const start = this.out.length;
      this.append(flat.text);
      if (this.quoteDepth === 0) this.add("pre", start);
      return;
    }
    flat.records.forEach((record, index) => {
      if (index > 0) this.append("\n\n");
      const start = this.out.length;
      this.append(record.title);
      this.add("bold", start);
      for (const field of record.fields) this.append(`\n${field.name}: ${field.value}`);
    });
  }

  private text(text: string): void {
    this.append(text);
  }

  private append(text: string): void {
    if (text === "") return;
    this.out += text;
    let newlines = 0;
    while (newlines < text.length && text.charCodeAt(text.length - 1 - newlines) === 0x0a) {
      newlines++;
    }
    this.trailingNewlines = newlines === text.length ? this.trailingNewlines + newlines : newlines;
  }

  inlines(tokens: readonly Token[]): void {
    for (const token of tokens) this.inline(token);
  }

  private styled(type: EntityType, tokens: readonly Token[], url?: string): void {
    const style: InlineStyle = { type, url, start: this.out.length };
    this.styles.push(style);
    this.inlines(tokens);
    this.styles.pop();
    this.add(type, style.start, url === undefined ? {} : { url });
  }

  private inline(token: Token): void {
    switch (token.type) {
      case "strong":
        this.styled("bold", (token as Tokens.Strong).tokens);
        return;
      case "em":
        this.styled("italic", (token as Tokens.Em).tokens);
        return;
      case "del":
        this.styled("strikethrough", (token as Tokens.Del).tokens);
        return;
      case "codespan":
        this.code((token as Tokens.Codespan).text);
        return;
      case "br":
        this.append("\n");
        return;
      case "link":
        this.link(token as Tokens.Link);
        return;
      case "image": {
        const image = token as Tokens.Image;
        this.link({ ...image, type: "link", tokens: [], text: image.text || image.href });
        return;
      }
      default: {
        const t = token as { text?: unknown; tokens?: Token[] };
        if (Array.isArray(t.tokens) && t.tokens.length > 0) this.inlines(t.tokens);
        else if (typeof t.text === "string") this.text(t.text);
      }
    }
  }

  /** A code span: alone (the styles around it closed and reopened), or plain in a link/quote. */
  private code(text: string): void {
    if (this.quoteDepth > 0 || this.styles.some((s) => s.type === "text_link")) {
      this.text(text);
      return;
    }
    for (const style of this.styles) {
      this.add(style.type, style.start, style.url === undefined ? {} : { url: style.url });
    }
    const start = this.out.length;
    this.append(text);
    this.add("code", start);
    for (const style of this.styles) style.start = this.out.length;
  }

  private link(link: Tokens.Link): void {
    const label = link.tokens.length > 0 ? plainOf(link.tokens) : link.text;
    const nested = this.styles.some((s) => s.type === "text_link");
    if (link.href === label || nested) {
      // A bare URL: Telegram links it itself.
      this.inlines(
        link.tokens.length > 0 ? link.tokens : [{ type: "text", raw: label, text: label }],
      );
      return;
    }
    if (!LinkSchemes.test(link.href)) {
      this.inlines(link.tokens);
      this.text(` (${link.href})`);
      return;
    }
    this.styled(
      "text_link",
      link.tokens.length > 0 ? link.tokens : [{ type: "text", raw: label, text: label }],
      link.href,
    );
  }
}
