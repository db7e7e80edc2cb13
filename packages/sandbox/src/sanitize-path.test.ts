import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { sanitizeForPath } from "./sanitize-path.js";

const hash12 = (value: string) => createHash("sha256").update(value).digest("hex").slice(0, 12);

describe("sanitizeForPath", () => {
  it.each([
    ["default", "default"],
    ["task-1.v2_x", "task-1.v2_x"],
    ["a".repeat(128), "a".repeat(128)],
    ["..a", "..a"],
  ])("keeps a safe value verbatim: %s", (value, expected) => {
    expect(sanitizeForPath(value)).toBe(expected);
  });

  it.each([
    ["profile:work", `profile_work-${hash12("profile:work")}`],
    [
      "session:agent:x:telegram:dm:42",
      `session_agent_x_telegram_dm_42-${hash12("session:agent:x:telegram:dm:42")}`,
    ],
    ["a/b c", `a_b_c-${hash12("a/b c")}`],
    ["ünï", `n-${hash12("ünï")}`],
  ])("replaces unsafe characters and appends a hash: %s", (value, expected) => {
    expect(sanitizeForPath(value)).toBe(expected);
  });

  it.each([
    [".", `task-${hash12(".")}`],
    ["..", `task-${hash12("..")}`],
    ["name.", `name-${hash12("name.")}`],
    ["", `task-${hash12("")}`],
    ["._:._", `task-${hash12("._:._")}`],
    [".hidden:x", `hidden_x-${hash12(".hidden:x")}`],
  ])("never yields '.', '..', a trailing dot or an empty name: %j", (value, expected) => {
    expect(sanitizeForPath(value)).toBe(expected);
  });

  it("cuts a value over 128 chars to 115 chars plus the hash", () => {
    const value = "b".repeat(129);
    expect(sanitizeForPath(value)).toBe(`${"b".repeat(115)}-${hash12(value)}`);
  });

  it("trims dots and underscores left at the cut", () => {
    const value = `${"c".repeat(114)}.${"d".repeat(20)}`;
    expect(sanitizeForPath(value)).toBe(`${"c".repeat(114)}-${hash12(value)}`);
  });

  it("always yields one safe directory name of at most 128 chars", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 300 }), (value) => {
        const out = sanitizeForPath(value);
        expect(out).toMatch(/^[A-Za-z0-9._-]{1,128}$/);
        expect(out).not.toBe(".");
        expect(out).not.toBe("..");
        expect(out.endsWith(".")).toBe(false);
      }),
    );
  });

  it("is injective in practice: distinct inputs give distinct names", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 200 }), fc.string({ maxLength: 200 }), (a, b) => {
        fc.pre(a !== b);
        expect(sanitizeForPath(a)).not.toBe(sanitizeForPath(b));
      }),
    );
  });

  it("is idempotent on its own output", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 300 }), (value) => {
        const once = sanitizeForPath(value);
        expect(sanitizeForPath(once)).toBe(once);
      }),
    );
  });
});
