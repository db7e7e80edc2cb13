import { describe, expect, it } from "vitest";
import { refusedNotice, shownName } from "./save-attachments.js";

describe("notices for files that were not saved", () => {
  it("names the file without controls or bidi overrides, bounded", () => {
    expect(shownName("report\u202Efdp.exe")).toBe("“reportfdp.exe”");
    expect(shownName("a\nb\u0007c")).toBe("“abc”");
    expect(shownName("  \u200E ")).toBe("“(unnamed file)”");
    const long = shownName("x".repeat(300));
    expect(long).toBe(`“${"x".repeat(79)}…”`);
  });

  it("says why and what to do, with the channel's reason for a failed download", () => {
    const refused = (reason: "too_large" | "source_failed" | "no_space", message: string) =>
      ({ status: "refused", name: "data.csv", reason, message }) as const;
    expect(
      refusedNotice(refused("too_large", "data.csv is over the 5-byte limit"), 20_000_000),
    ).toBe(
      "📎 “data.csv” was not saved: it is larger than 20 MB, the limit for files sent to this bot.",
    );
    expect(
      refusedNotice(
        refused("source_failed", "data.csv: the download failed (Telegram answered 502)"),
        1,
      ),
    ).toBe("📎 “data.csv” could not be downloaded (Telegram answered 502). Send it again.");
    expect(
      refusedNotice(
        refused("no_space", "data.csv: no space left in /workspace (its size is 64 MiB)"),
        1,
      ),
    ).toBe(
      "📎 “data.csv” was not saved: no space left in /workspace (its size is 64 MiB). Delete files in /workspace or /reset, then send it again.",
    );
  });
});
