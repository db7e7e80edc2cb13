import { describe, expect, it } from "vitest";
import { cutMiddle } from "./openai-summary.js";

const LoneSurrogate = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

describe("cutMiddle", () => {
  it("keeps text that fits, and cuts the middle of longer text with the count dropped", () => {
    expect(cutMiddle("short", 10)).toBe("short");
    expect(cutMiddle("aaaaXXXXXXbbbb", 8)).toBe(
      "aaaa\n[… 6 chars trimmed to fit the context …]\nbbbb",
    );
  });

  it("never splits a surrogate pair at either cut", () => {
    // After the "x", every even position falls inside an emoji (two UTF-16 units).
    for (const max of [6, 7, 8, 9, 10]) {
      const cut = cutMiddle(`x${"😀".repeat(20)}y`, max);
      expect(LoneSurrogate.test(cut)).toBe(false);
      const [head, tail] = cut.split(/\n\[… \d+ chars trimmed to fit the context …\]\n/);
      const dropped = Number(/\[… (\d+) chars/.exec(cut)![1]);
      expect(head!.length + tail!.length + dropped).toBe(42);
    }
  });
});
