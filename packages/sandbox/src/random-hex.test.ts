import { describe, expect, it } from "vitest";
import { randomHex } from "./random-hex.js";

describe("randomHex", () => {
  it("gives the asked number of bytes as hex, none repeated across refills of its pool", () => {
    const seen = new Set<string>();
    // 3,000 values of 12 bytes: the 4 KiB pool is refilled about nine times.
    for (let i = 0; i < 3000; i++) {
      const hex = randomHex(12);
      expect(hex).toMatch(/^[0-9a-f]{24}$/);
      seen.add(hex);
    }
    expect(seen.size).toBe(3000);
    expect(randomHex(1)).toMatch(/^[0-9a-f]{2}$/);
    expect(randomHex(4096)).toHaveLength(8192);
  });

  it("refuses a size it cannot give", () => {
    for (const bytes of [0, -1, 1.5, 4097]) {
      expect(() => randomHex(bytes)).toThrow(RangeError);
    }
  });
});
