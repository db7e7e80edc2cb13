import { describe, expect, it } from "vitest";
import { choiceId, formatChoiceData, parseChoiceData } from "./choice-data.js";
import { ChoiceRouter, UnknownChoiceText } from "./router.js";

const press = (data: string) =>
  ({ profile: "p", platform: "telegram", chatId: "1", messageId: "2", userId: "3", data }) as const;

describe("choice data", () => {
  it("round-trips within 64 bytes with an unguessable id", () => {
    const id = choiceId();
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(choiceId()).not.toBe(id);
    const text = formatChoiceData({ kind: "ap", id, option: "session" });
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(64);
    expect(parseChoiceData(text)).toEqual({ kind: "ap", id, option: "session" });
  });

  it.each([
    "",
    "ap:x",
    "ap:x:once:extra",
    "AP:x:once",
    "ap:x y:once",
    "ap:é:once",
    `ap:${"a".repeat(70)}:once`,
  ])("reads nothing from %j", (text) => {
    expect(parseChoiceData(text)).toBeUndefined();
  });

  it("routes by kind, refuses unknown kinds and forged data, and a handler's failure politely", async () => {
    const failures: unknown[] = [];
    const router = new ChoiceRouter((error) => failures.push(error))
      .on("ap", async (_press, data) => ({ kind: "decided", text: `chose ${data.option}` }))
      .on("rs", async () => {
        throw new Error("boom");
      });
    expect(await router.press(press("ap:abc:once"))).toEqual({
      kind: "decided",
      text: "chose once",
    });
    expect(await router.press(press("zz:abc:once"))).toEqual({
      kind: "refused",
      notice: UnknownChoiceText,
    });
    expect(await router.press(press("not data"))).toEqual({
      kind: "refused",
      notice: UnknownChoiceText,
    });
    expect((await router.press(press("rs:abc:ok"))).kind).toBe("refused");
    expect(failures).toHaveLength(1);
    expect(() => router.on("ap", async () => ({ kind: "refused", notice: "" }))).toThrow(/already/);
  });
});
