import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { codePointLength, splitText, utf16Length } from "./split-text.js";

const FenceLine = /^ {0,3}`{3,}/;

/** Fence lines per chunk must pair up when the input's do. */
const fenceLines = (chunk: string): number =>
  chunk.split("\n").filter((l) => FenceLine.test(l)).length;
const LoneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const squash = (text: string): string => text.replace(/\s+/g, "");

describe("splitText", () => {
  it.each([
    ["empty text", "", 16, []],
    ["whitespace only", " \n \n", 16, []],
    ["text that fits", "hello world", 16, ["hello world"]],
    ["exactly the limit", "a".repeat(16), 16, ["a".repeat(16)]],
    ["cuts at the last newline", "first line\nsecond line", 16, ["first line", "second line"]],
    ["prefers a newline to a later space", "aa\nbb cc dd ee ff", 16, ["aa", "bb cc dd ee ff"]],
    [
      "falls back to the last space",
      "alpha beta gamma delta epsilon",
      20,
      ["alpha beta gamma", "delta epsilon"],
    ],
    [
      "cuts at a space right after the limit",
      "alpha beta gamma delta",
      16,
      ["alpha beta gamma", "delta"],
    ],
    ["cuts hard inside a long word", "x".repeat(20), 16, ["x".repeat(16), "x".repeat(4)]],
    ["drops blank lines at the cut", "abcdefghijklmno\n\n\nnext", 16, ["abcdefghijklmno", "next"]],
    [
      "keeps indentation after a cut",
      "first line here\n  indented",
      16,
      ["first line here", "  indented"],
    ],
  ] as const)("%s", (_name, text, maxLength, expected) => {
    expect(splitText(text, { maxLength })).toEqual(expected);
  });

  it("never splits a surrogate pair at the limit", () => {
    const text = `${"a".repeat(15)}😀${"b".repeat(10)}`;
    const chunks = splitText(text, { maxLength: 16 });
    expect(chunks).toEqual(["a".repeat(15), `😀${"b".repeat(10)}`]);
  });

  it.each([
    ["an emoji sequence", 12, "👨‍👩‍👧"],
    ["a flag", 14, "🇩🇪"],
    ["an accent", 15, "e\u0301"],
  ] as const)(
    "never splits %s at a hard cut: it starts the next chunk whole",
    (_name, before, grapheme) => {
      const text = `${"a".repeat(before)}${grapheme}${"b".repeat(6)}`;
      expect(splitText(text, { maxLength: 16 })).toEqual([
        "a".repeat(before),
        `${grapheme}${"b".repeat(6)}`,
      ]);
    },
  );

  it("closes a code fence at a cut and reopens it with its language", () => {
    const code = Array.from({ length: 12 }, (_, i) => `line ${i}`).join("\n");
    const text = `Here:\n\`\`\`ts\n${code}\n\`\`\`\nDone.`;
    const chunks = splitText(text, { maxLength: 40 });
    expect(chunks.length).toBeGreaterThan(2);
    for (const chunk of chunks) {
      expect(chunk.length).toBeLessThanOrEqual(40);
      expect(fenceLines(chunk) % 2).toBe(0);
    }
    expect(chunks[1]?.startsWith("```ts\n")).toBe(true);
    expect(chunks[0]?.endsWith("\n```")).toBe(true);
    expect(chunks.at(-1)?.endsWith("Done.")).toBe(true);
  });

  it("closes a ~~~ fence at a cut with ~~~ and reopens it; a ``` line inside it is code", () => {
    const code = ["```", ...Array.from({ length: 10 }, (_, i) => `line ${i}`), "```"].join("\n");
    const text = `Here:\n~~~md\n${code}\n~~~\nDone.`;
    const chunks = splitText(text, { maxLength: 40 });
    expect(chunks.length).toBeGreaterThan(2);
    for (const [index, chunk] of chunks.entries()) {
      expect(chunk.length).toBeLessThanOrEqual(40);
      const lines = chunk.split("\n");
      if (index > 0) expect(lines[0]).toBe("~~~md");
      if (index < chunks.length - 1) expect(lines.at(-1)).toBe("~~~");
    }
    // Nothing but the fences the cuts added: the ``` lines stay the model's two.
    const added = (chunks.length - 1) * 2;
    const tildes = chunks
      .join("\n")
      .split("\n")
      .filter((line) => line.startsWith("~~~"));
    expect(tildes).toHaveLength(2 + added);
    expect(
      chunks
        .join("\n")
        .split("\n")
        .filter((line) => line === "```"),
    ).toHaveLength(2);
    expect(chunks.at(-1)?.endsWith("~~~\nDone.")).toBe(true);
  });

  it("closes a four-backtick fence with four, which a ``` line inside it does not close", () => {
    const code = Array.from({ length: 8 }, (_, i) => (i === 3 ? "```" : `line ${i}`)).join("\n");
    const chunks = splitText(`\`\`\`\`md\n${code}\n\`\`\`\``, { maxLength: 32 });
    expect(chunks.length).toBeGreaterThan(1);
    for (const chunk of chunks.slice(0, -1)) expect(chunk.endsWith("\n````")).toBe(true);
    for (const chunk of chunks.slice(1)) expect(chunk.startsWith("````md\n")).toBe(true);
  });

  it("counts with a custom measure (Discord-style code points)", () => {
    const text = "😀".repeat(20);
    const chunks = splitText(text, { maxLength: 16, measure: codePointLength });
    expect(chunks).toEqual(["😀".repeat(16), "😀".repeat(4)]);
    expect(splitText(text, { maxLength: 16 })).toEqual([
      "😀".repeat(8),
      "😀".repeat(8),
      "😀".repeat(4),
    ]);
  });

  it("rejects a limit too small to make progress with fences", () => {
    expect(() => splitText("abc", { maxLength: 8 })).toThrow(RangeError);
  });

  const textArb = fc
    .array(
      fc.oneof(
        fc.string({ unit: "grapheme", maxLength: 30 }),
        fc.constantFrom(
          "\n",
          " ",
          "\n\n",
          "😀",
          "a😀b",
          "```",
          "```py",
          "\n```\n",
          "\n~~~\n",
          "~~~~js",
          "x".repeat(50),
        ),
      ),
      { maxLength: 60 },
    )
    .map((parts) => parts.join(""));

  for (const [name, measure] of [
    ["UTF-16 units", utf16Length],
    ["code points", codePointLength],
  ] as const) {
    it(`property (${name}): chunks fit, are well-formed, and lose nothing but whitespace`, () => {
      fc.assert(
        fc.property(textArb, fc.integer({ min: 16, max: 120 }), (text, maxLength) => {
          const chunks = splitText(text, { maxLength, measure });
          for (const chunk of chunks) {
            expect(measure(chunk)).toBeLessThanOrEqual(maxLength);
            expect(LoneSurrogate.test(chunk)).toBe(false);
            expect(chunk.trim()).not.toBe("");
          }
          if (!/```|~~~/.test(text)) expect(squash(chunks.join(""))).toBe(squash(text));
        }),
        { numRuns: 300 },
      );
    });
  }

  it("property: balanced fences stay balanced in every chunk, content kept", () => {
    const block = fc
      .tuple(
        fc.constantFrom("", "js", "python"),
        fc.array(fc.stringMatching(/^[a-z =();]{0,30}$/), { maxLength: 20 }),
        fc.array(fc.stringMatching(/^[A-Za-z ,.]{0,40}$/), { maxLength: 5 }),
      )
      .map(
        ([lang, code, prose]) => `${prose.join("\n")}\n\`\`\`${lang}\n${code.join("\n")}\n\`\`\``,
      );
    fc.assert(
      fc.property(
        fc.array(block, { minLength: 1, maxLength: 4 }),
        fc.integer({ min: 40, max: 200 }),
        (blocks, maxLength) => {
          const text = blocks.join("\n");
          const chunks = splitText(text, { maxLength });
          for (const chunk of chunks) {
            expect(chunk.length).toBeLessThanOrEqual(maxLength);
            expect(fenceLines(chunk) % 2).toBe(0);
          }
          // Removing every fence line (original and added) leaves the same content.
          const content = (s: string) =>
            squash(
              s
                .split("\n")
                .filter((l) => !FenceLine.test(l))
                .join(""),
            );
          expect(content(chunks.join("\n"))).toBe(content(text));
        },
      ),
      { numRuns: 300 },
    );
  });
});
