import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { candidateNames, inboxFileName, NumberedNames, numberedName } from "./inbox-name.js";

const bytes = (text: string) => Buffer.byteLength(text, "utf8");

/** What no inbox name may contain: separators, controls, invisible format characters, shell syntax. */
const Forbidden = /[/\\\p{Cc}\p{Cf}\s;&|$`<>(){}[\]*?!~#'"%^=,:@]/u;

describe("inboxFileName", () => {
  it.each([
    ["report.pdf", "report.pdf"],
    ["Отчёт 2024.csv", "Отчёт_2024.csv"],
    ["../../x", "x"],
    ["..\\..\\windows\\x.txt", "x.txt"],
    ["/etc/passwd", "passwd"],
    [";rm -rf ~;.txt", "_rm_-rf_.txt"],
    ["$(reboot).sh", "_reboot_.sh"],
    ["a`id`b.txt", "a_id_b.txt"],
    [".bashrc", "bashrc"],
    ["..", "file"],
    ["", "file"],
    ["...", "file"],
    ["-rf", "rf"],
    ["--help.txt", "help.txt"],
    ["name.", "name"],
    ["tab\there\nnew.txt", "tab_here_new.txt"],
    ["__init__.py", "__init__.py"],
    ["photo.jpg.exe", "photo.jpg.exe"],
  ])("%j becomes %j", (original, expected) => {
    expect(inboxFileName(original)).toBe(expected);
  });

  it("removes RTL overrides and zero-width characters instead of keeping them", () => {
    // "invoice‮fdp.exe" shows as "invoiceexe.pdf" in a right-to-left aware view.
    expect(inboxFileName("invoice\u202Efdp.exe")).toBe("invoicefdp.exe");
    expect(inboxFileName("a\u2066b\u2069c\u200Bd\uFEFF.txt")).toBe("abcd.txt");
  });

  it("cuts a 300-character name to 100 bytes and keeps the extension", () => {
    const name = inboxFileName(`${"a".repeat(300)}.txt`);
    expect(name).toBe(`${"a".repeat(96)}.txt`);
    const wide = inboxFileName(`${"ж".repeat(300)}.jpeg`);
    expect(bytes(wide)).toBeLessThanOrEqual(100);
    expect(wide.endsWith("ж.jpeg")).toBe(true);
  });

  it("normalizes to NFC, so one name has one spelling", () => {
    expect(inboxFileName("cafe\u0301.txt")).toBe("caf\u00e9.txt");
  });

  it("gives safe, bounded, non-hidden names for any input (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 400 }), (original) => {
        const name = inboxFileName(original);
        expect(name.length).toBeGreaterThan(0);
        expect(bytes(name)).toBeLessThanOrEqual(100);
        expect(name).not.toMatch(Forbidden);
        expect(name).not.toMatch(/^[.-]/);
        expect(name === "." || name === "..").toBe(false);
        expect(inboxFileName(name)).toBe(name);
      }),
      { numRuns: 2_000 },
    );
  });
});

describe("numberedName", () => {
  it("puts the number before the extension", () => {
    expect(numberedName("report.pdf", 1)).toBe("report.pdf");
    expect(numberedName("report.pdf", 2)).toBe("report-2.pdf");
    expect(numberedName("bashrc", 3)).toBe("bashrc-3");
  });

  it("stays within 100 bytes and distinct for every number (property)", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 400 }),
        fc.integer({ min: 2, max: 10_000 }),
        (original, n) => {
          const name = inboxFileName(original);
          const numbered = numberedName(name, n);
          expect(bytes(numbered)).toBeLessThanOrEqual(100);
          expect(numbered).not.toMatch(Forbidden);
          expect(numbered).not.toBe(name);
          expect(numbered).not.toBe(numberedName(name, n + 1));
        },
      ),
      { numRuns: 1_000 },
    );
  });
});

describe("candidateNames", () => {
  it("offers the numbered names first, then random ones no one can take ahead", () => {
    const names = candidateNames("photo.jpg");
    expect(names.slice(0, NumberedNames)).toEqual(
      Array.from({ length: NumberedNames }, (_, i) => numberedName("photo.jpg", i + 1)),
    );
    const random = names.slice(NumberedNames);
    expect(random.length).toBeGreaterThan(0);
    for (const name of random) expect(name).toMatch(/^photo-[0-9a-f]{16}\.jpg$/);
    expect(new Set(names).size).toBe(names.length);
    expect(candidateNames("photo.jpg").slice(NumberedNames)).not.toEqual(random);
  });

  it("keeps every candidate safe and within 100 bytes (property)", () => {
    fc.assert(
      fc.property(fc.string({ unit: "binary", maxLength: 400 }), (original) => {
        for (const candidate of candidateNames(inboxFileName(original))) {
          expect(bytes(candidate)).toBeLessThanOrEqual(100);
          expect(candidate).not.toMatch(Forbidden);
          expect(candidate).not.toMatch(/^[.-]/);
        }
      }),
      { numRuns: 300 },
    );
  });
});
