import { describe, expect, it } from "vitest";
import { collapseBlankLines } from "./text.js";

describe("collapseBlankLines", () => {
  it.each([
    ["a\n\n\nb", "a\n\nb"],
    ["a\n \n\t\n\nb", "a\n\nb"],
    ["a\n\nb", "a\n\nb"],
    ["a\nb", "a\nb"],
    ["\n\n  \nstart", "start"],
    ["end  \n\n\n", "end"],
    ["a\n\n\n  indented", "a\n\n  indented"],
    ["", ""],
  ])("turns %j into %j", (input, expected) => {
    expect(collapseBlankLines(input)).toBe(expected);
  });
});
