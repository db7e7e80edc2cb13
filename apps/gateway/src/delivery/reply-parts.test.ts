import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { cutNotice, ReplyFileName, type ReplyPart, replyParts } from "./reply-parts.js";
import { splitText } from "./split-text.js";

const texts = (parts: readonly ReplyPart[]) =>
  parts.flatMap((part) => (part.kind === "text" ? [part.text] : []));
const files = (parts: readonly ReplyPart[]) =>
  parts.flatMap((part) => (part.kind === "file" ? [part] : []));

describe("replyParts", () => {
  it("sends a reply of at most maxChunks messages as those messages, no file", () => {
    const text = "x".repeat(4096 * 3);
    const parts = replyParts(text, { maxLength: 4096, maxChunks: 3 });
    expect(texts(parts)).toEqual(splitText(text, { maxLength: 4096 }));
    expect(files(parts)).toEqual([]);
  });

  it("cuts a 1 MB reply to maxChunks messages ending with the notice, and attaches the whole as reply.txt", () => {
    const text = "a".repeat(1_000_000);
    const parts = replyParts(text, { maxLength: 4096, maxChunks: 4 });
    expect(parts.map((p) => p.kind)).toEqual(["text", "text", "text", "text", "file"]);
    const head = texts(parts);
    for (const chunk of head) expect(chunk.length).toBeLessThanOrEqual(4096);
    expect(head[3]).toMatch(
      /\n\n✂️ Cut here: the whole reply \(1(\.0)? MB\) is attached as reply\.txt\.$/,
    );
    expect(head[3]).toBe(`${"a".repeat(head[3]!.indexOf("\n"))}\n\n${cutNotice(1_000_000)}`);
    expect(text.startsWith(head.join("").replace(/\n\n✂️.*$/, ""))).toBe(true);
    const [file] = files(parts);
    expect(file?.filename).toBe(ReplyFileName);
    expect(file?.mime).toBe("text/plain");
    expect(file?.bytes.equals(Buffer.from(text))).toBe(true);
  });

  it("keeps the file's bytes exactly the reply's UTF-8, emoji and all", () => {
    const text = "€🙂 ".repeat(3000);
    const [file] = files(replyParts(text, { maxLength: 2000, maxChunks: 2 }));
    expect(file?.bytes.toString("utf8")).toBe(text);
  });

  it("refuses a maxChunks below 1", () => {
    expect(() => replyParts("hi", { maxLength: 100, maxChunks: 0 })).toThrow(/at least 1/);
  });

  it("never exceeds maxChunks messages or maxLength, and attaches exactly when cut", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "grapheme", maxLength: 3000 }),
        fc.integer({ min: 100, max: 600 }),
        fc.integer({ min: 1, max: 5 }),
        (text, maxLength, maxChunks) => {
          const parts = replyParts(text, { maxLength, maxChunks });
          const head = texts(parts);
          expect(head.length).toBeLessThanOrEqual(maxChunks);
          for (const chunk of head) expect(chunk.length).toBeLessThanOrEqual(maxLength);
          const cut = splitText(text, { maxLength }).length > maxChunks;
          expect(files(parts)).toHaveLength(cut ? 1 : 0);
          if (cut) {
            expect(files(parts)[0]?.bytes.toString("utf8")).toBe(text);
            expect(head.at(-1)).toContain(ReplyFileName);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe("replyParts, rendered", () => {
  it("renders a huge Markdown reply from its head: maxChunks messages, the notice, the whole file", () => {
    const text = Array.from({ length: 20_000 }, (_, i) => `- **item ${i}** \`code\``).join("\n");
    const parts = replyParts(text, {
      maxLength: 4096,
      maxChunks: 3,
      platform: "telegram",
      format: "markdown",
    });
    expect(parts.map((p) => p.kind)).toEqual(["text", "text", "text", "file"]);
    const head = parts.flatMap((p) => (p.kind === "text" ? [p] : []));
    for (const part of head) {
      expect(part.parseMode).toBe("HTML");
      expect(part.plain.length).toBeLessThanOrEqual(4096);
    }
    expect(head[0]?.plain.startsWith("• item 0 code\n• item 1 code")).toBe(true);
    expect(head[2]?.plain.endsWith(cutNotice(Buffer.byteLength(text)))).toBe(true);
    expect(files(parts)[0]?.bytes.toString("utf8")).toBe(text);
  });

  it("ends a cut reply's head with the notice even when its head renders short", () => {
    const link = "[x](https://example.org/a-very-long-address-that-shows-as-one-character)";
    const text = `${link} `.repeat(40_000);
    const parts = replyParts(text, {
      maxLength: 4096,
      maxChunks: 2,
      platform: "telegram",
      format: "markdown",
    });
    const head = parts.flatMap((p) => (p.kind === "text" ? [p] : []));
    expect(head.at(-1)?.plain.endsWith(cutNotice(Buffer.byteLength(text)))).toBe(true);
    expect(files(parts)).toHaveLength(1);
  });
});
