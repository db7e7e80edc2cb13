import { parse_html } from "@telegraf/entity";
import fc from "fast-check";
import { describe, expect, test } from "vitest";
import { escapeDiscordMarkdown, type RenderedText, render } from "./render.js";

/** What Telegram makes of a part: its own HTML parser (tdlib's, ported), text and entities. */
function telegramSees(part: RenderedText) {
  expect(part.parseMode).toBe("HTML");
  const parsed = parse_html(part.text);
  expect(parsed.text).toBe(part.plain);
  return parsed;
}

const telegram = (text: string, maxLength = 4096) =>
  render("telegram", text, "markdown", { maxLength });
const one = (text: string) => {
  const parts = telegram(text);
  expect(parts).toHaveLength(1);
  return telegramSees(parts[0] as RenderedText);
};

describe("Telegram, markdown", () => {
  test("emphasis, strikethrough and inline code become entities", () => {
    const seen = one("a **bold** and *italic* and ~~gone~~ and `ls -la`");
    expect(seen.text).toBe("a bold and italic and gone and ls -la");
    expect(seen.entities).toEqual([
      { type: "bold", offset: 2, length: 4 },
      { type: "italic", offset: 11, length: 6 },
      { type: "strikethrough", offset: 22, length: 4 },
      { type: "code", offset: 31, length: 6 },
    ]);
  });

  test("a code span inside bold stands beside it, never inside (Telegram's nesting rule)", () => {
    const seen = one("**run `make` now**");
    expect(seen.text).toBe("run make now");
    expect(seen.entities).toEqual([
      { type: "bold", offset: 0, length: 4 },
      { type: "code", offset: 4, length: 4 },
      { type: "bold", offset: 8, length: 4 },
    ]);
  });

  test("a fenced code block keeps its language and the backticks inside it", () => {
    const seen = one('Try:\n\n```python\nprint("```")\nx = `y`\n```\n\nDone.');
    expect(seen.text).toBe('Try:\n\nprint("```")\nx = `y`\n\nDone.');
    expect(seen.entities).toEqual([{ type: "pre", offset: 6, length: 20, language: "python" }]);
  });

  test("a fence opened with four backticks holds a three-backtick fence", () => {
    const seen = one("````md\n```js\nx\n```\n````");
    expect(seen.text).toBe("```js\nx\n```");
    expect(seen.entities).toEqual([{ type: "pre", offset: 0, length: 11, language: "md" }]);
  });

  test("nested lists are indented bullet and number lines", () => {
    const seen = one("- one\n  - two\n    1. three\n    2. four\n- five\n- [ ] todo\n- [x] done");
    expect(seen.text).toBe(
      "• one\n   • two\n      1. three\n      2. four\n• five\n• ☐ todo\n• ☑ done",
    );
  });

  test("an ordered list keeps its start number", () => {
    expect(one("3. c\n4. d").text).toBe("3. c\n4. d");
  });

  test("a narrow table is a monospace grid", () => {
    const seen = one("| name | size |\n|---|--:|\n| a.txt | 12 |\n| **b** | 3 |");
    expect(seen.text).toBe("name   size\n─────  ────\na.txt    12\nb         3");
    expect(seen.entities).toEqual([{ type: "pre", offset: 0, length: seen.text.length }]);
  });

  test("a wide table is one record per row, its first cell the bold title", () => {
    const long = "a description far too long to fit a phone's width";
    const seen = one(
      `| file | what | size |\n|---|---|---|\n| a.txt | ${long} | 12 |\n| b | short | |`,
    );
    expect(seen.text).toBe(`a.txt\nwhat: ${long}\nsize: 12\n\nb\nwhat: short`);
    expect(seen.entities).toEqual([
      { type: "bold", offset: 0, length: 5 },
      { type: "bold", offset: seen.text.indexOf("\n\nb") + 2, length: 1 },
    ]);
  });

  test("links become text links; their URL is escaped in the attribute", () => {
    const part = telegram('see [the docs](https://x.example/?a=1&b="2"<x>) now')[0] as RenderedText;
    expect(part.text).toBe(
      'see <a href="https://x.example/?a=1&amp;b=&quot;2&quot;&lt;x&gt;">the docs</a> now',
    );
    expect(telegramSees(part).entities).toEqual([
      { type: "text_link", offset: 4, length: 8, url: 'https://x.example/?a=1&b="2"<x>' },
    ]);
  });

  test("a link to another scheme shows its target as text; a bare URL stays text", () => {
    const seen = one("[click](javascript:alert(1)) and https://example.org/a_b_c");
    expect(seen.text).toBe("click (javascript:alert(1)) and https://example.org/a_b_c");
    expect(seen.entities).toEqual([]);
  });

  test("stray underscores and asterisks stay as written", () => {
    for (const text of [
      "snake_case_name and max_retries_count",
      "a * b = c, x_1 ** 2, 5 *",
      "*open and never closed",
      "_open and never closed",
      "glob file_*.txt or **/*.ts",
    ]) {
      expect(one(text)).toEqual({ text, entities: [] });
    }
  });

  test("paired markers inside words follow CommonMark, as GitHub shows them", () => {
    expect(one("2*3*4 and __init__.py")).toEqual({
      text: "234 and init.py",
      entities: [
        { type: "italic", offset: 1, length: 1 },
        { type: "bold", offset: 8, length: 4 },
      ],
    });
  });

  test("HTML-like text is text: it is escaped, never markup", () => {
    const part = telegram('use <b>bold</b> & <a href="x">, or <script>')[0] as RenderedText;
    expect(part.text).toBe(
      'use &lt;b&gt;bold&lt;/b&gt; &amp; &lt;a href="x"&gt;, or &lt;script&gt;',
    );
    expect(telegramSees(part)).toEqual({
      text: 'use <b>bold</b> & <a href="x">, or <script>',
      entities: [],
    });
  });

  test("headings are bold; quotes are blockquotes and hold no code entity", () => {
    const seen = one("## Result\n\n> it said `ok`\n> twice");
    expect(seen.text).toBe("Result\n\nit said ok\ntwice");
    expect(seen.entities).toEqual([
      { type: "bold", offset: 0, length: 6 },
      { type: "blockquote", offset: 8, length: 16 },
    ]);
  });

  test("a line with a MEDIA: tag is shown exactly as written", () => {
    const seen = one("Here: MEDIA:/workspace/*out*_v2_.png **not bold**\n\n**bold**");
    expect(seen.text).toBe("Here: MEDIA:/workspace/*out*_v2_.png **not bold**\n\nbold");
    expect(seen.entities).toEqual([{ type: "bold", offset: 51, length: 4 }]);
  });
});

describe("Telegram, split", () => {
  test("a long code block split across messages is a code block, language kept, in each", () => {
    const lines = Array.from({ length: 400 }, (_, i) => `line ${i} <tag> & "q"`);
    const parts = telegram(`Output:\n\n\`\`\`sh\n${lines.join("\n")}\n\`\`\`\n\nEnd.`);
    expect(parts.length).toBeGreaterThan(1);
    const seen = parts.map(telegramSees);
    for (const [index, part] of seen.entries()) {
      expect(part.text.length).toBeLessThanOrEqual(4096);
      const pre = part.entities.find((e) => e.type === "pre");
      expect(pre).toMatchObject({ language: "sh" });
      if (index > 0) expect(pre?.offset).toBe(0);
    }
    expect(seen.map((s) => s.text).join("\n")).toBe(`Output:\n\n${lines.join("\n")}\n\nEnd.`);
  });

  test("a bold paragraph split in the middle is bold on both sides", () => {
    const words = Array.from({ length: 40 }, (_, i) => `word${i}`).join(" ");
    const parts = telegram(`**${words}**`, 100).map(telegramSees);
    expect(parts.length).toBeGreaterThan(2);
    for (const part of parts) {
      expect(part.text.length).toBeLessThanOrEqual(100);
      expect(part.entities).toEqual([{ type: "bold", offset: 0, length: part.text.length }]);
    }
    expect(parts.map((p) => p.text).join(" ")).toBe(words);
  });

  test("a cut never falls inside a link's text when a space outside it fits", () => {
    const text = `${"x".repeat(70)} [a link with words](https://example.org) tail`;
    const parts = telegram(text, 80).map(telegramSees);
    expect(parts[0]?.text).toBe("x".repeat(70));
    expect(parts[1]?.entities).toEqual([
      { type: "text_link", offset: 0, length: 17, url: "https://example.org" },
    ]);
  });

  test("an escape is never cut: the limit counts visible characters, not HTML", () => {
    const parts = telegram("<&>".repeat(3000));
    expect(parts.map((p) => telegramSees(p).text.length)).toEqual([4096, 4096, 808]);
  });

  test("a surrogate pair is never cut", () => {
    const parts = telegram(`a${"😀".repeat(3000)}`).map(telegramSees);
    expect(parts.map((p) => p.text.length)).toEqual([4095, 1906]);
  });

  test("an emoji sequence or a flag is never cut", () => {
    for (const [before, grapheme] of [
      [4092, "👨‍👩‍👧"],
      [4094, "🇩🇪"],
    ] as const) {
      const parts = telegram(`${"a".repeat(before)}${grapheme}b`).map(telegramSees);
      expect(parts.map((p) => p.text)).toEqual(["a".repeat(before), `${grapheme}b`]);
    }
  });

  test("past maxParts the last part ends with the notice", () => {
    const text = Array.from({ length: 200 }, (_, i) => `**item ${i}** ${"z".repeat(30)}`).join(
      "\n\n",
    );
    const parts = render("telegram", text, "markdown", {
      maxLength: 500,
      maxParts: 2,
      notice: "\n\n✂️ cut <here>",
    });
    expect(parts).toHaveLength(2);
    const last = telegramSees(parts[1] as RenderedText);
    expect(last.text.length).toBeLessThanOrEqual(500);
    expect(last.text.endsWith("\n\n✂️ cut <here>")).toBe(true);
  });
});

describe("plain, Discord and the console", () => {
  const markdown =
    "# T\n\n**b** <b>x</b> snake_case\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n#### deep";

  test("Telegram plain is the text as written, no parse mode", () => {
    expect(render("telegram", markdown, "plain", { maxLength: 4096 })).toEqual([
      { text: markdown, plain: markdown },
    ]);
  });

  test("the console shows the text as written whatever the format", () => {
    expect(render("console", markdown, "markdown", { maxLength: 4096 })[0]?.text).toBe(markdown);
  });

  test("Discord markdown passes through; tables are flattened and deep headings bold", () => {
    expect(render("discord", markdown, "markdown", { maxLength: 2000 })[0]?.text).toBe(
      "# T\n\n**b** <b>x</b> snake_case\n\n```\na  b\n─  ─\n1  2\n```\n\n**deep**",
    );
  });

  test("Discord plain escapes Markdown so the text shows literally", () => {
    expect(render("discord", "a *b* _c_ `d`", "plain", { maxLength: 2000 })[0]?.text).toBe(
      "a \\*b\\* \\_c\\_ \\`d\\`",
    );
  });

  test("verbatim (the gateway's own words) goes as written on every platform", () => {
    const text = "/tz [zone] — a *b* _c_ `d` <i>";
    for (const platform of ["discord", "telegram", "console"] as const) {
      expect(render(platform, text, "verbatim", { maxLength: 2000 })).toEqual([
        { text, plain: text },
      ]);
    }
  });

  test("Discord: a long code block is closed and reopened with its language", () => {
    const body = Array.from({ length: 300 }, (_, i) => `print(${i})`).join("\n");
    const parts = render("discord", `\`\`\`py\n${body}\n\`\`\``, "markdown", { maxLength: 2000 });
    expect(parts.length).toBeGreaterThan(1);
    for (const part of parts) {
      expect(part.text.startsWith("```py\n")).toBe(true);
      expect(part.text.endsWith("\n```")).toBe(true);
      expect(part.text.length).toBeLessThanOrEqual(2000);
    }
  });

  test("Markdown that shows no text on Telegram is sent as written, never as nothing", () => {
    for (const text of ["#", "> ", "```\n```", "|   |\n|---|", "[1]: https://example.com"]) {
      const parts = telegram(text);
      expect(parts).toHaveLength(1);
      expect(telegramSees(parts[0] as RenderedText).text).toBe(text.trim());
    }
  });

  test("empty text gives no parts", () => {
    expect(render("telegram", "  \n", "markdown", { maxLength: 4096 })).toEqual([]);
  });
});

describe("Telegram, any input", () => {
  const pieces = [
    "**",
    "*",
    "_",
    "__",
    "`",
    "```",
    "```py\n",
    "\n",
    "\n\n",
    " ",
    "- ",
    "  - ",
    "1. ",
    "> ",
    "# ",
    "| a | b |\n|---|---|\n| 1 | 2 |\n",
    '[l](https://e.org/?a=1&b="2")',
    "<b>",
    "</i>",
    "&amp;",
    "&",
    "😀",
    "word",
    "MEDIA:/x/*y*.png",
    "~~",
    "\\",
  ];
  const markdown = fc
    .array(fc.oneof(fc.constantFrom(...pieces), fc.string({ maxLength: 8 })), { maxLength: 120 })
    .map((parts) => parts.join(""));

  test("every part parses as Telegram parses it, within the limit, and nothing is lost", () => {
    fc.assert(
      fc.property(markdown, fc.integer({ min: 16, max: 300 }), (text, maxLength) => {
        const whole = render("telegram", text, "markdown", { maxLength: 1_000_000 });
        const parts = render("telegram", text, "markdown", { maxLength });
        for (const part of parts) {
          const seen = telegramSees(part);
          expect(seen.text.length).toBeLessThanOrEqual(maxLength);
        }
        const squash = (s: string) => s.replace(/\s+/g, "");
        expect(squash(parts.map((p) => p.plain).join(""))).toBe(
          squash(whole.map((p) => p.plain).join("")),
        );
      }),
      { numRuns: 300 },
    );
  });
});

describe("Discord plain escaping", () => {
  test("escapes markers anywhere and line-start syntax at line starts, in linear time", () => {
    expect(escapeDiscordMarkdown("# h\n> q\n- a\n1. b\na-b #c [x](y) \\ ~~s~~ ||p||")).toBe(
      "\\# h\n\\> q\n\\- a\n1\\. b\na-b #c \\[x\\](y) \\\\ \\~\\~s\\~\\~ \\|\\|p\\|\\|",
    );
    const long = "d".repeat(1_000_000);
    expect(escapeDiscordMarkdown(long)).toBe(long);
  });
});
