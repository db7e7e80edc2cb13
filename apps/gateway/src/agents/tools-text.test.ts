import { describe, expect, it } from "vitest";
import { keepTail, omittedMarker, safeHead, safeTail, truncateMiddle } from "./tools-text.js";

const emoji = "😀"; // two UTF-16 units

describe("truncateMiddle", () => {
  it("returns text within the cap unchanged", () => {
    expect(truncateMiddle("hello", 5)).toBe("hello");
  });

  it("keeps the start and the end around a marker counting the dropped characters", () => {
    const text = `${"a".repeat(500)}${"m".repeat(1000)}${"z".repeat(500)}`;
    const cut = truncateMiddle(text, 300);
    expect(cut.length).toBeLessThanOrEqual(300);
    expect(cut.startsWith("a")).toBe(true);
    expect(cut.endsWith("z".repeat(150))).toBe(true);
    const omitted = Number(/\[… (\d+) chars omitted …\]/.exec(cut)?.[1]);
    const kept = cut.length - omittedMarker(omitted).length - 2;
    expect(omitted + kept).toBe(text.length);
  });

  it("never exceeds the cap for any length", () => {
    for (const cap of [0, 1, 79, 80, 81, 200, 1000]) {
      for (const length of [cap, cap + 1, cap * 3 + 7, 100_000]) {
        expect(truncateMiddle("x".repeat(length), cap).length).toBeLessThanOrEqual(cap);
      }
    }
  });

  it("does not split a surrogate pair", () => {
    const text = emoji.repeat(500);
    const cut = truncateMiddle(text, 201);
    expect(cut).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(cut).not.toMatch(/(?<![\ud800-\udbff])[\udc00-\udfff]/);
  });
});

describe("keepTail", () => {
  it("returns short text whole", () => {
    expect(keepTail("abc", 3)).toEqual({ text: "abc", omitted: 0 });
  });

  it("keeps the end and starts at a whole line when one is near", () => {
    const text = `${"x".repeat(100)}\nline two\nline three`;
    const cut = keepTail(text, 22);
    expect(cut.text).toBe("line two\nline three");
    expect(cut.omitted + cut.text.length).toBe(text.length);
  });

  it("cuts inside a line when no line boundary is near", () => {
    const cut = keepTail("y".repeat(1000), 100);
    expect(cut).toEqual({ text: "y".repeat(100), omitted: 900 });
  });
});

describe("safeHead / safeTail", () => {
  it("step around surrogate pairs", () => {
    const text = `a${emoji}b`;
    expect(safeHead(text, 2)).toBe("a");
    expect(safeTail(text, 2)).toBe("b");
    expect(safeHead(text, 3)).toBe(`a${emoji}`);
    expect(safeTail(text, 1)).toBe(`${emoji}b`);
  });
});
