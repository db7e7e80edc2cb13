import { describe, expect, it } from "vitest";
import { stripMention } from "./inbound.js";
import { guildUploadBytes, uploadLimitFor } from "./limits.js";

const MiB = 1024 * 1024;

describe("uploadLimitFor", () => {
  it.each([
    [undefined, undefined, 10 * MiB],
    [undefined, 0, 10 * MiB],
    [undefined, 1, 10 * MiB],
    [undefined, 2, 50 * MiB],
    [undefined, 3, 100 * MiB],
    [5 * MiB, 3, 5 * MiB],
    [25 * MiB, undefined, 25 * MiB],
  ])("configured %s, boost level %s → %s bytes", (configured, tier, expected) => {
    expect(uploadLimitFor(configured, tier)).toBe(expected);
  });

  it("never grants less than the default to a guild", () => {
    for (const tier of [0, 1, 2, 3])
      expect(guildUploadBytes(tier)).toBeGreaterThanOrEqual(10 * MiB);
  });
});

describe("stripMention", () => {
  it.each([
    ["<@42> /stop", "/stop"],
    ["<@!42> hello <@42>", "hello"],
    ["hi <@421> there", "hi <@421> there"],
    ["<@42>", ""],
  ])("%j → %j", (text, expected) => {
    expect(stripMention(text, "42")).toBe(expected);
  });

  it("removes mentions of the bot's own roles, and no other role's", () => {
    expect(stripMention("<@&7> /stop <@&8>", "42", ["7"])).toBe("/stop <@&8>");
  });
});
