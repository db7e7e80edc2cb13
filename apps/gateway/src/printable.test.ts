import { describe, expect, it } from "vitest";
import { InBrowser, printable } from "./printable.js";

describe("printable", () => {
  it("escapes controls, bidi formatting and line separators, and backslashes so escapes stay unambiguous", () => {
    expect(printable("\x1b[2J\x00\x7f\x9b")).toBe("\\x1b[2J\\x00\\x7f\\x9b");
    expect(printable("a\nb\r\tc")).toBe("a\\nb\\r\\tc");
    expect(printable("in\u202efdp.exe \u2066x\u2069 \u200f \u061c \u2028")).toBe(
      "in\\u202efdp.exe \\u2066x\\u2069 \\u200f \\u061c \\u2028",
    );
    expect(printable("C:\\x1b")).toBe("C:\\\\x1b");
  });

  it("keeps backslashes for the web console, escaping the rest as before", () => {
    expect(printable("grep 'a\\|b' \u202e\n", InBrowser)).toBe("grep 'a\\|b' \\u202e\\n");
  });

  it("keeps every other character, emoji sequences and other scripts included", () => {
    const text = "Zoë 李 👩‍👩‍👧 עברית";
    expect(printable(text)).toBe(text);
  });
});
