import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as gateway from "@mediagate/gateway";
import * as media from "@mediagate/media";
import * as sandbox from "@mediagate/sandbox";
import { describe, expect, it } from "vitest";

/**
 * The error codes of docs/errors.md: every error class in the sources (`apps/<app>/src`,
 * `packages/<package>/{src,client}`, internal or exported alike) is named `…Error`, extends
 * `MediagateError` (or an error class of ours that does), keeps `name` equal to its class
 * name, and declares its code(s) as `"MG_…"` literals in its body; no code belongs to two
 * classes, and docs/errors.md has one row for each code, no more. The classes are read from
 * the source text; the packages' exports cross-check that reading.
 */
const RepoRoot = fileURLToPath(new URL("../../", import.meta.url));
const SourceDirs = ["src", "client"];
const Base = "MediagateError";
const Builtins = new Set(["Error", "TypeError", "RangeError", "SyntaxError", "AggregateError"]);
const CodePattern = /^MG_[A-Z0-9_]+$/;
/** A top-level class: its name, its base, its body up to the `}` that closes it at column 0. */
const ClassPattern =
  /^(?:export )?(?:abstract )?class (\w+)(?:<[^>{]*>)? extends ([\w.]+)[^{\n]*\{\n([\s\S]*?)^\}/gm;

interface ErrorClass {
  readonly name: string;
  readonly file: string;
  readonly codes: readonly string[];
}

interface Inventory {
  readonly classes: readonly ErrorClass[];
  /** One line per broken rule: `<file>: <class>: <what>`. */
  readonly problems: readonly string[];
}

/** Every error class of `files` (path → source text), and the rules each one breaks. */
function inventory(files: ReadonlyMap<string, string>): Inventory {
  const found = [...files].flatMap(([file, text]) =>
    [...text.matchAll(ClassPattern)].map(([, name = "", base = "", body = ""]) => ({
      name,
      base,
      body,
      file,
    })),
  );
  const errorNames = new Set([Base]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const { name, base } of found) {
      if (errorNames.has(name)) continue;
      if (Builtins.has(base) || errorNames.has(base) || base.endsWith("Error")) {
        errorNames.add(name);
        grew = true;
      }
    }
  }
  const classes: ErrorClass[] = [];
  const problems: string[] = [];
  const owners = new Map<string, string>();
  for (const { name, base, body, file } of found) {
    if (!errorNames.has(name) || name === Base) continue;
    const at = `${file}: ${name}`;
    if (!name.endsWith("Error")) problems.push(`${at}: the name does not end in Error`);
    if (Builtins.has(base)) problems.push(`${at}: extends ${base}, not ${Base}`);
    if (!new RegExp(`readonly name(?:: string)? = "${name}";`).test(body)) {
      problems.push(`${at}: name is not "${name}"`);
    }
    const codes = [...new Set([...body.matchAll(/"(MG_[^"]*)"/g)].map(([, code = ""]) => code))];
    if (!/^ {2}(?:override )?readonly code\b/m.test(body) || codes.length === 0) {
      problems.push(`${at}: no code (readonly code = "MG_<AREA>_<WHAT>")`);
    }
    for (const code of codes) {
      if (!CodePattern.test(code))
        problems.push(`${at}: ${code} is not MG_ in capitals and digits`);
      const owner = owners.get(code);
      if (owner === undefined) owners.set(code, name);
      else problems.push(`${at}: ${code} is the code of ${owner} too`);
    }
    classes.push({ name, file, codes });
  }
  return { classes, problems };
}

/** The TypeScript sources (tests left out) of every app and package. */
function sources(): Map<string, string> {
  const files = new Map<string, string>();
  for (const group of ["apps", "packages"]) {
    for (const unit of readdirSync(join(RepoRoot, group))) {
      for (const dir of SourceDirs) {
        const root = join(group, unit, dir);
        let entries: string[];
        try {
          entries = readdirSync(join(RepoRoot, root), { recursive: true, encoding: "utf8" });
        } catch {
          continue;
        }
        for (const entry of entries) {
          if (!entry.endsWith(".ts") || entry.endsWith(".test.ts") || entry.endsWith(".d.ts")) {
            continue;
          }
          const file = join(root, entry);
          files.set(file, readFileSync(join(RepoRoot, file), "utf8"));
        }
      }
    }
  }
  return files;
}

/** The codes docs/errors.md gives a row of their own (a table row starting with the code). */
function documentedCodes(markdown: string): string[] {
  return [...markdown.matchAll(/^\| *`(MG_[A-Z0-9_]+)` *\|/gm)].map(([, code = ""]) => code);
}

/** The error classes a package exports, with the names of their bases. */
function exportedErrorClasses(exports: Record<string, unknown>): Map<string, string[]> {
  const classes = new Map<string, string[]>();
  for (const [name, value] of Object.entries(exports)) {
    if (typeof value !== "function" || !(value.prototype instanceof Error)) continue;
    const bases: string[] = [];
    for (let at = Object.getPrototypeOf(value); at !== Function.prototype && at !== null; ) {
      bases.push((at as { name: string }).name);
      at = Object.getPrototypeOf(at);
    }
    classes.set(name, bases);
  }
  return classes;
}

describe("error codes", () => {
  const found = inventory(sources());
  const codes = found.classes.flatMap((c) => c.codes).sort();

  it("every error class of the sources is named …Error, extends MediagateError and has a code of its own", () => {
    expect(found.problems).toEqual([]);
    expect(found.classes.length).toBeGreaterThanOrEqual(44);
    expect(found.classes.map((c) => c.name)).toEqual(
      expect.arrayContaining(["DeadlineError", "CallTimeoutError", "ContainerLostError"]),
    );
  });

  it("docs/errors.md has one row per code, for exactly the codes of the sources", () => {
    const markdown = readFileSync(join(RepoRoot, "docs/errors.md"), "utf8");
    const rows = documentedCodes(markdown);
    expect(rows.filter((code, index) => rows.indexOf(code) !== index)).toEqual([]);
    expect([...rows].sort()).toEqual(codes);
    const mentioned = new Set(markdown.match(/\bMG_[A-Z0-9_]*[A-Z0-9]\b/g));
    expect([...mentioned].filter((code) => !codes.includes(code))).toEqual([]);
  });

  it("the error classes the packages export are the ones read from the sources", () => {
    const names = new Set(found.classes.map((c) => c.name));
    const exported = new Map([
      ...exportedErrorClasses(gateway),
      ...exportedErrorClasses(sandbox),
      ...exportedErrorClasses(media),
    ]);
    expect(exported.size).toBeGreaterThanOrEqual(20);
    for (const [name, bases] of exported) {
      expect(names.has(name), `${name} is not found in the sources`).toBe(true);
      expect(bases, name).toContain(Base);
    }
    const damaged = {
      operation: "open",
      path: "/j.db",
      reason: "bad",
      systemCode: "SQLITE_NOTADB",
    };
    expect(new gateway.StorageError(damaged).code).toBe("MG_JOURNAL_DAMAGED");
  });

  it("refuses a class without a code, one named otherwise, one on Error, a code of two classes", () => {
    const planted = inventory(
      new Map([
        [
          "packages/a/src/errors.ts",
          [
            "export class GoodError extends MediagateError {",
            '  override readonly name = "GoodError";',
            '  readonly code = "MG_A_GOOD";',
            "}",
            "export class MutedError extends MediagateError {",
            '  override readonly name = "MutedError";',
            "}",
            "class Hung extends GoodError {",
            '  override readonly name = "Hung";',
            '  override readonly code = "MG_A_HUNG";',
            "}",
            "export class PlainError extends Error {",
            '  override readonly name = "PlainError";',
            '  readonly code = "MG_A_GOOD";',
            "}",
            "export class MisnamedError extends MediagateError {",
            '  override readonly name = "Misnamed";',
            '  readonly code = "MG_a_misnamed";',
            "}",
            "export class Unrelated extends Map {",
            "}",
          ].join("\n"),
        ],
      ]),
    );
    const at = "packages/a/src/errors.ts";
    expect(planted.classes.map((c) => c.name)).toEqual([
      "GoodError",
      "MutedError",
      "Hung",
      "PlainError",
      "MisnamedError",
    ]);
    expect(planted.problems).toEqual([
      `${at}: MutedError: no code (readonly code = "MG_<AREA>_<WHAT>")`,
      `${at}: Hung: the name does not end in Error`,
      `${at}: PlainError: extends Error, not MediagateError`,
      `${at}: PlainError: MG_A_GOOD is the code of GoodError too`,
      `${at}: MisnamedError: name is not "MisnamedError"`,
      `${at}: MisnamedError: MG_a_misnamed is not MG_ in capitals and digits`,
    ]);
  });
});
