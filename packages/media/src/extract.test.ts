import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { extractMedia } from "./extract.js";
import { collapseBlankLines } from "./text.js";

const none = new Set<string>();
const paths = (reply: string) => extractMedia(reply).tags.map((tag) => tag.path);
const text = (reply: string, keep: ReadonlySet<string> = none) => extractMedia(reply).render(keep);

describe("extractMedia: which tags are found", () => {
  it.each([
    ["a bare path", "Here: MEDIA:/workspace/a.png", ["/workspace/a.png"]],
    [
      "a double-quoted path with spaces",
      'MEDIA:"/workspace/my file.png"',
      ["/workspace/my file.png"],
    ],
    [
      "a single-quoted path with spaces",
      "MEDIA:'/workspace/my file.png'",
      ["/workspace/my file.png"],
    ],
    [
      "a backtick-quoted path with spaces",
      "MEDIA:`/workspace/my file.png`",
      ["/workspace/my file.png"],
    ],
    ["space after the colon", "MEDIA: /workspace/a.png", ["/workspace/a.png"]],
    ["several tags", "MEDIA:/a.png MEDIA:/b.png\nMEDIA:/c.png", ["/a.png", "/b.png", "/c.png"]],
    ["duplicates once, in first order", "MEDIA:/b MEDIA:/a MEDIA:/b", ["/b", "/a"]],
    ["a tag at the very end", "done MEDIA:/end.png", ["/end.png"]],
    [
      "trailing ASCII punctuation",
      "(MEDIA:/a.png), MEDIA:/b.png. MEDIA:/c.png;",
      ["/a.png", "/b.png", "/c.png"],
    ],
    [
      "trailing quotes and brackets",
      "[MEDIA:/a.png] {MEDIA:/b.png} 'x MEDIA:/c.png'",
      ["/a.png", "/b.png", "/c.png"],
    ],
    [
      "CJK full stop right after a path",
      "图表MEDIA:/workspace/图.png。然后",
      ["/workspace/图.png"],
    ],
    ["CJK comma inside a line", "文件MEDIA:/a.png，还有MEDIA:/b.png、完", ["/a.png", "/b.png"]],
    ["fullwidth parenthesis", "（MEDIA:/a.png）", ["/a.png"]],
    ["Windows line endings", "one\r\nMEDIA:/a.png\r\ntwo MEDIA:/b.png\r\n", ["/a.png", "/b.png"]],
    ["a relative path", "MEDIA:out/a.png", ["out/a.png"]],
    ["an unclosed quote as a bare path", 'MEDIA:"/a.png and more', ["/a.png"]],
    ["a tag after inline code on the same line", "`code` MEDIA:/a.png", ["/a.png"]],
    ["a tag after a closed fence", "```\nx\n```\nMEDIA:/a.png", ["/a.png"]],
    ["a tag indented four spaces (no indented-code rule)", "    MEDIA:/a.png", ["/a.png"]],
    ["a tag in angle brackets", "see <MEDIA:/x.png> now", ["/x.png"]],
    ["a quoted tag in angle brackets", '<MEDIA:"/a b.png">', ["/a b.png"]],
    ["an angle-bracketed tag with trailing punctuation", "<MEDIA:/x.png.>", ["/x.png"]],
  ])("finds %s", (_, reply, expected) => {
    expect(paths(reply)).toEqual(expected);
  });

  it.each([
    ["fenced code (backticks)", "```\nMEDIA:/a.png\n```"],
    ["fenced code (tildes)", "~~~sh\nMEDIA:/a.png\n~~~"],
    ["fenced code with a longer closer", "````\n```\nMEDIA:/a.png\n````"],
    ["an unclosed fence", "text\n```\nMEDIA:/a.png"],
    ["a fence indented three spaces", "   ```\nMEDIA:/a.png\n   ```"],
    ["a CRLF fence", "```\r\nMEDIA:/a.png\r\n```\r\n"],
    ["inline code", "run `MEDIA:/a.png` now"],
    ["inline code with double backticks", "``MEDIA:/a.png ` x``"],
    ["a blockquote", "> MEDIA:/a.png"],
    ["an indented blockquote", "  > quoted MEDIA:/a.png"],
    ["a word before MEDIA:", "SOCIALMEDIA:/a.png"],
    ["an empty path", 'MEDIA: \nMEDIA:""'],
    ["punctuation only", "MEDIA:.,;"],
  ])("ignores a tag in %s", (_, reply) => {
    expect(paths(reply)).toEqual([]);
  });

  it("counts occurrences of a repeated tag", () => {
    expect(extractMedia("MEDIA:/a MEDIA:/a").tags).toEqual([{ path: "/a", occurrences: 2 }]);
  });
});

describe("extractMedia: directives", () => {
  it("honours and strips [[audio_as_voice]] and [[as_document]] anywhere in prose", () => {
    const result = extractMedia("[[audio_as_voice]] hi MEDIA:/a.ogg [[as_document]]");
    expect(result.asVoice).toBe(true);
    expect(result.asDocument).toBe(true);
    expect(result.render(none)).toBe("hi");
  });

  it("leaves directives in code alone", () => {
    const result = extractMedia("`[[as_document]]`\n```\n[[audio_as_voice]]\n```");
    expect(result.asVoice).toBe(false);
    expect(result.asDocument).toBe(false);
    expect(result.render(none)).toBe("`[[as_document]]`\n```\n[[audio_as_voice]]\n```");
  });
});

describe("extractMedia: rendered text", () => {
  it.each([
    ["removes a delivered tag", "Here is the chart: MEDIA:/a.png", "Here is the chart:"],
    ["keeps punctuation after a removed tag", "See MEDIA:/a.png.", "See."],
    ["removes a tag between words", "a MEDIA:/x.png b", "a b"],
    ["removes a tag starting a line", "MEDIA:/x.png done", "done"],
    ["removes quoted tags", 'one MEDIA:"/a b.png" two', "one two"],
    ["removes a tag with its angle brackets", "chart: <MEDIA:/x.png> done", "chart: done"],
    ["removes a quoted tag with its angle brackets", 'a <MEDIA:"/a b.png">.', "a."],
    ["keeps a lone < before a tag", "a <MEDIA:/x.png b", "a < b"],
    ["collapses 3+ newlines to 2", "a\n\n\n\nb", "a\n\nb"],
    ["collapses lines emptied by removal", "a\n\nMEDIA:/x.png\n\nb", "a\n\nb"],
    ["normalizes CRLF", "a\r\n\r\n\r\nb\r\nc", "a\n\nb\nc"],
    [
      "keeps code untouched",
      "```\nMEDIA:/a.png\n```\n`MEDIA:/b`\n> MEDIA:/c",
      "```\nMEDIA:/a.png\n```\n`MEDIA:/b`\n> MEDIA:/c",
    ],
    ["keeps two newlines", "a\n\nb", "a\n\nb"],
    ["strips a reply made of tags only", "MEDIA:/a.png\nMEDIA:/b.png\n", ""],
  ])("%s", (_, reply, expected) => {
    expect(text(reply)).toBe(expected);
  });

  it("keeps every occurrence of a kept tag verbatim and removes the others", () => {
    const reply = "x MEDIA:/gone.png y MEDIA:/kept.png z MEDIA:/kept.png";
    expect(text(reply, new Set(["/kept.png"]))).toBe("x y MEDIA:/kept.png z MEDIA:/kept.png");
  });

  it("keeps a quoted tag with its quotes", () => {
    expect(text('see MEDIA:"/a b.png" now', new Set(["/a b.png"]))).toBe(
      'see MEDIA:"/a b.png" now',
    );
  });
});

describe("extractMedia: properties", () => {
  const fragment = fc.constantFrom(
    "MEDIA:",
    "MEDIA:/x",
    "`",
    "```",
    "~~~",
    ">",
    "<",
    "\n",
    "\r\n",
    " ",
    '"',
    "'",
    "[[as_document]]",
    "。",
    "a",
    "/",
  );
  const reply = fc.array(fragment, { maxLength: 60 }).map((parts) => parts.join(""));

  it("with every tag kept, renders the input itself (normalized, blank lines collapsed)", () => {
    fc.assert(
      fc.property(reply, (input) => {
        fc.pre(!input.includes("[["));
        const result = extractMedia(input);
        const kept = result.render(new Set(result.tags.map((tag) => tag.path)));
        expect(kept).toBe(collapseBlankLines(input.replace(/\r\n?/g, "\n")));
        expect(kept.includes("\n\n\n")).toBe(false);
      }),
    );
  });

  it("never leaves a found tag in the text when nothing is kept", () => {
    fc.assert(
      fc.property(reply, (input) => {
        const result = extractMedia(input);
        const out = result.render(none);
        for (const tag of result.tags) expect(extractMedia(out).tags).not.toContainEqual(tag);
      }),
    );
  });

  it("finds a quoted tag placed in arbitrary surrounding prose", () => {
    const name = fc.stringMatching(/^[a-z0-9 ._-]{1,20}$/).filter((s) => s.trim() !== "");
    fc.assert(
      fc.property(fc.string({ maxLength: 30 }), name, (before, file) => {
        fc.pre(!/[`>~\r\n]/.test(before));
        const path = `/workspace/${file}`.trim();
        expect(paths(`${before} MEDIA:"${path}"`)).toContain(path);
      }),
    );
  });
});
