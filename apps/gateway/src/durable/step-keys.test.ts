import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  formatStepKey,
  isTextStepKey,
  mediaStepKey,
  type OutboxNoticeName,
  parseStepKey,
  type StepKey,
  textStepKey,
} from "./step-keys.js";

/**
 * Keys as the gateway wrote them into journals before step-keys.ts existed (template strings
 * in the channels and the outbox), with what each must parse to. A journal written then is
 * resumed by this code: none of these may change.
 */
const StoredKeys: [string, StepKey][] = [
  ["text:0", { kind: "text", index: 0 }],
  ["text:7", { kind: "text", index: 7 }],
  ["text:12", { kind: "text", index: 12 }],
  ["media:/workspace/out/a.bin", { kind: "media", path: "/workspace/out/a.bin" }],
  ["media:/workspace/a.png", { kind: "media", path: "/workspace/a.png" }],
  [
    "media:/workspace/out/chart 2: final.png",
    {
      kind: "media",
      path: "/workspace/out/chart 2: final.png",
    },
  ],
  ["notice:0", { kind: "notice", index: 0 }],
  ["notices:plan", { kind: "outboxNotice", name: "plan" }],
  ["notices:delivery", { kind: "outboxNotice", name: "delivery" }],
  ["notices:given_up", { kind: "outboxNotice", name: "given_up" }],
  [
    "notices:plan/text:0",
    { kind: "outboxNoticeStep", name: "plan", step: { kind: "text", index: 0 } },
  ],
  [
    "notices:delivery/text:1",
    { kind: "outboxNoticeStep", name: "delivery", step: { kind: "text", index: 1 } },
  ],
  [
    "notices:given_up/text:0",
    { kind: "outboxNoticeStep", name: "given_up", step: { kind: "text", index: 0 } },
  ],
  ["given_up", { kind: "givenUp" }],
];

describe("step keys", () => {
  it.each(StoredKeys)("parses %s, stored by earlier versions, and formats it back", (raw, key) => {
    expect(parseStepKey(raw)).toEqual(key);
    expect(formatStepKey(key)).toBe(raw);
  });

  it.each([
    ["/workspace/a:b:c.txt", "media:/workspace/a:b:c.txt"],
    ["/workspace/my report (final).pdf", "media:/workspace/my report (final).pdf"],
    ["/workspace/фото/猫 🐱.jpg", "media:/workspace/фото/猫 🐱.jpg"],
    ["C:\\Users\\me\\a.png", "media:C:\\Users\\me\\a.png"],
    ["/workspace/notices:plan/text:0", "media:/workspace/notices:plan/text:0"],
    ["/workspace/line\nbreak", "media:/workspace/line\nbreak"],
    ["", "media:"],
  ])("keeps the path %j whole: colons, spaces, unicode", (path, raw) => {
    expect(mediaStepKey(path)).toBe(raw);
    expect(parseStepKey(raw)).toEqual({ kind: "media", path });
  });

  it("round-trips every key it can format", () => {
    const name = fc.constantFrom<OutboxNoticeName>("plan", "delivery", "given_up");
    const index = fc.nat();
    const leaf = fc.oneof(
      index.map((i): StepKey => ({ kind: "text", index: i })),
      fc.string({ unit: "grapheme" }).map((path): StepKey => ({ kind: "media", path })),
      index.map((i): StepKey => ({ kind: "notice", index: i })),
      name.map((n): StepKey => ({ kind: "outboxNotice", name: n })),
      fc.constant<StepKey>({ kind: "givenUp" }),
    );
    const key = fc.oneof(
      leaf,
      fc
        .tuple(name, leaf)
        .map(([n, step]): StepKey => ({ kind: "outboxNoticeStep", name: n, step })),
    );
    fc.assert(
      fc.property(key, (k) => {
        expect(parseStepKey(formatStepKey(k))).toEqual(k);
      }),
    );
  });

  it("formats whatever it parses back to the same string", () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `text:${s}`),
          fc.string().map((s) => `notices:${s}`),
        ),
        (raw) => {
          const key = parseStepKey(raw);
          if (key !== undefined) expect(formatStepKey(key)).toBe(raw);
        },
      ),
    );
  });

  it.each([
    "text:",
    "text:-1",
    "text:01",
    "text:1.5",
    "text: 1",
    "text:1e3",
    "text:99999999999999999999",
    "notice:x",
    "notices:",
    "notices:other",
    "notices:plan/",
    "notices:plan/bogus",
    "caption:/workspace/a.png",
    "given_up:1",
    "Text:0",
    "",
    "sent",
  ])("does not read %j as a step it knows", (raw) => {
    expect(parseStepKey(raw)).toBeUndefined();
  });

  it("refuses to format an index that is not a non-negative integer", () => {
    expect(() => textStepKey(-1)).toThrow(RangeError);
    expect(() => textStepKey(1.5)).toThrow(RangeError);
    expect(() => formatStepKey({ kind: "notice", index: Number.NaN })).toThrow(RangeError);
  });

  it("tells the reply's own text steps from a notice's", () => {
    expect(isTextStepKey("text:3")).toBe(true);
    expect(isTextStepKey("notices:delivery/text:0")).toBe(false);
    expect(isTextStepKey("media:text:0")).toBe(false);
    expect(isTextStepKey("notice:0")).toBe(false);
  });
});
