import { execFileSync } from "node:child_process";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { shellQuote } from "./shell-scripts.js";

describe("shellQuote", () => {
  it("round-trips any string through a real sh", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 40 }), (value) => {
        const out = execFileSync("sh", ["-c", `printf %s ${shellQuote(value)}`]).toString();
        expect(out).toBe(value.replaceAll("\0", ""));
      }),
      { numRuns: 60 },
    );
  });

  it("drops NUL bytes, which no shell word can hold, and keeps the rest", () => {
    const value = "a\0b'\0c";
    const quoted = shellQuote(value);
    expect(quoted).not.toContain("\0");
    // execFileSync refuses an argument holding a NUL: the quoted word must reach sh whole.
    const out = execFileSync("sh", ["-c", `printf %s ${quoted}`]).toString();
    expect(out).toBe("ab'c");
  });

  it("neutralises quotes and expansions", () => {
    const hostile = `'; echo pwned; '$(id)\`id\`$HOME`;
    const out = execFileSync("sh", ["-c", `printf %s ${shellQuote(hostile)}`]).toString();
    expect(out).toBe(hostile);
  });
});
