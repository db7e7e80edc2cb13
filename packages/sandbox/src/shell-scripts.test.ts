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

  it("neutralises quotes and expansions", () => {
    const hostile = `'; echo pwned; '$(id)\`id\`$HOME`;
    const out = execFileSync("sh", ["-c", `printf %s ${shellQuote(hostile)}`]).toString();
    expect(out).toBe(hostile);
  });
});
