import { describe, expect, it } from "vitest";
import { discordLimits, telegramLimits } from "./limits.js";
import { formatBytes } from "./notice.js";

describe("upload limits", () => {
  it("gives Telegram 10 MB for photos and 50 MB for everything else", () => {
    const limits = telegramLimits();
    expect(limits.maxBytes("photo")).toBe(10_000_000);
    for (const kind of ["animation", "video", "audio", "voice", "document"] as const) {
      expect(limits.maxBytes(kind)).toBe(50_000_000);
    }
  });

  it("lets a local Bot API server raise the Telegram limits", () => {
    const limits = telegramLimits({ otherBytes: 2_000_000_000 });
    expect(limits.maxBytes("video")).toBe(2_000_000_000);
    expect(limits.maxBytes("photo")).toBe(10_000_000);
  });

  it("gives Discord 10 MiB for every kind unless the guild allows more", () => {
    expect(discordLimits().maxBytes("photo")).toBe(10 * 1024 * 1024);
    expect(discordLimits({ maxBytes: 50 * 1024 * 1024 }).maxBytes("video")).toBe(52_428_800);
  });

  it.each([0, -1, 1.5, Number.NaN])("rejects a limit of %s", (bad) => {
    expect(() => discordLimits({ maxBytes: bad })).toThrow(RangeError);
    expect(() => telegramLimits({ photoBytes: bad })).toThrow(/photoBytes/);
  });
});

describe("formatBytes", () => {
  it.each([
    [0, "0 B"],
    [999, "999 B"],
    [1000, "1 KB"],
    [1536, "1.5 KB"],
    [10_485_760, "10.5 MB"],
    [50_000_000, "50 MB"],
    [123_456_789, "123 MB"],
    [2_000_000_000, "2 GB"],
  ])("shows %d bytes as %s", (bytes, text) => {
    expect(formatBytes(bytes)).toBe(text);
  });
});
