import { describe, expect, it } from "vitest";
import { DiscordEditLimits } from "../discord/edit-limits.js";
import { EditLimits } from "./edit-limits.js";

describe("the fakes' edit pace", () => {
  it("Telegram: one edit a second per chat, 20 a minute in a group, 429 with retry_after", () => {
    let now = 0;
    const limits = new EditLimits({ now: () => now });
    expect(limits.check("editMessageText", "5")).toBeUndefined();
    now = 500;
    expect(limits.check("sendMessageDraft", "5")).toMatchObject({
      status: 429,
      body: { ok: false, error_code: 429, parameters: { retry_after: 1 } },
    });
    expect(limits.check("sendMessage", "5")).toBeUndefined();
    now = 1001;
    expect(limits.check("editMessageText", "5")).toBeUndefined();
    for (let i = 0; i < 20; i++) {
      now = 10_000 + i * 1001;
      expect(limits.check("editMessageText", "-9")).toBeUndefined();
    }
    now += 1001;
    expect(limits.check("editMessageText", "-9")?.status).toBe(429);
    expect(limits.refused).toBe(2);
    expect(limits.most("5")).toBe(1);
    expect(limits.most("-9", 60_000)).toBe(20);
  });

  it("Discord: five edits per five seconds per channel", () => {
    let now = 0;
    const limits = new DiscordEditLimits({ now: () => now });
    for (let i = 0; i < 5; i++) expect(limits.check("1")).toBeUndefined();
    now = 1000;
    expect(limits.check("1")).toMatchObject({ status: 429, body: { retry_after: 4 } });
    expect(limits.check("2")).toBeUndefined();
    now = 5000;
    expect(limits.check("1")).toBeUndefined();
    expect(limits.most("1")).toBe(5);
  });
});
