import { describe, expect, it } from "vitest";
import {
  formatPairingCode,
  generatePairingCode,
  normalizePairingCode,
  PairingAlphabet,
  PairingCodeLength,
} from "./pairing.js";

describe("pairing codes", () => {
  it("are eight symbols of an alphabet without look-alikes (0/O, 1/I, L)", () => {
    expect(PairingAlphabet).toHaveLength(31);
    for (const confusable of ["0", "O", "1", "I", "L"]) {
      expect(PairingAlphabet).not.toContain(confusable);
    }
    for (let i = 0; i < 200; i++) {
      const code = generatePairingCode();
      expect(code).toMatch(new RegExp(`^[${PairingAlphabet}]{${PairingCodeLength}}$`));
    }
  });

  it("have enough entropy: at least 39 bits, and 2000 codes do not repeat", () => {
    expect(PairingCodeLength * Math.log2(PairingAlphabet.length)).toBeGreaterThan(39);
    const codes = new Set(Array.from({ length: 2000 }, () => generatePairingCode()));
    expect(codes.size).toBe(2000);
  });

  it("use every symbol of the alphabet (the random source picks among all of them)", () => {
    const seen = new Set<string>();
    for (let i = 0; i < 400; i++) for (const c of generatePairingCode()) seen.add(c);
    expect([...seen].sort().join("")).toBe([...PairingAlphabet].sort().join(""));
  });

  it("take their symbols from the random source given", () => {
    const picks: number[] = [];
    const code = generatePairingCode((max) => {
      picks.push(max);
      return picks.length - 1;
    });
    expect(picks).toEqual(Array(PairingCodeLength).fill(PairingAlphabet.length));
    expect(code).toBe(PairingAlphabet.slice(0, PairingCodeLength));
  });

  it("are shown as two halves and read back however an admin types them", () => {
    expect(formatPairingCode("ABCDEFGH")).toBe("ABCD-EFGH");
    for (const typed of [
      "ABCD-EFGH",
      "abcd-efgh",
      " abcd efgh ",
      "ABCDEFGH",
      "AbCd-EfGh",
      // A phone's smart punctuation, or a code copied out of a document.
      "ABCD\u2013EFGH",
      "ABCD\u2014EFGH",
      "ABCD\u2011EFGH",
      "abcd\u2212efgh",
    ]) {
      expect(normalizePairingCode(typed)).toBe("ABCDEFGH");
    }
  });

  it("refuse text that cannot be a code: wrong length, look-alikes, other symbols", () => {
    for (const typed of ["", "ABCD-EFG", "ABCD-EFGHJ", "ABCD-EFG0", "ABCD-EFGI", "ABCD_EFGH"]) {
      expect(normalizePairingCode(typed), typed).toBeUndefined();
    }
  });
});
