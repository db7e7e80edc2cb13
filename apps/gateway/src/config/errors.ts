import { MediagateError } from "@mediagate/io";
import { closest, distance } from "fastest-levenshtein";
import type { z } from "zod";
import { looksLikeToken } from "../redact.js";
import type { Locate } from "./locate.js";
import { isShownPath, knownKeysAt } from "./secrets.js";

/** One problem in the configuration: where, what was there, what should be. */
export interface ConfigIssue {
  /** Key path such as `profiles[1].sandbox.persistent` (empty for the document root). */
  readonly path: string;
  /** The same path as keys (`["profiles", 1, "sandbox", "persistent"]`), to find it in a file. */
  readonly keys?: readonly PropertyKey[] | undefined;
  /**
   * Where in the file (`file:line:column`): the key that holds the problem, or the place of a
   * YAML syntax error. Absent when the config did not come from a file.
   */
  readonly at?: { readonly line: number; readonly column: number } | undefined;
  /** The offending value, already rendered and redacted for display. */
  readonly got: string;
  readonly expected: string;
}

/**
 * The configuration is unusable. `message` lists every issue, one per line, with the file;
 * an issue with a position is named `file:line:column`, the way editors and terminals link it.
 */
export class ConfigError extends MediagateError {
  override readonly name = "ConfigError";
  readonly code = "MG_CONFIG_INVALID";
  constructor(
    /** Config file path, or `<embedded defaults>` / `<object>` when there was no file. */
    readonly file: string,
    readonly issues: readonly ConfigIssue[],
  ) {
    const only = issues.length === 1 ? issues[0] : undefined;
    super(
      only === undefined
        ? `invalid config ${file}:\n${issues.map((i) => `  - ${formatIssue(i, file)}`).join("\n")}`
        : only.at === undefined
          ? `invalid config ${file}: ${formatIssue(only)}`
          : `invalid config ${formatIssue(only, file)}`,
    );
  }
}

/**
 * `path: got X, expected Y`; `file:line:column: path: got X, expected Y` for a positioned issue
 * (no path for a YAML syntax error).
 */
export function formatIssue(issue: ConfigIssue, file?: string): string {
  const what = `got ${issue.got}, expected ${issue.expected}`;
  const keyed = issue.path === "" ? what : `${issue.path}: ${what}`;
  if (issue.at === undefined) return keyed;
  const { line, column } = issue.at;
  const place = file === undefined ? `line ${line}, column ${column}` : `${file}:${line}:${column}`;
  return `${place}: ${keyed}`;
}

/** An issue at the key path `keys`. */
export function issueAt(
  keys: readonly PropertyKey[],
  problem: { readonly got: string; readonly expected: string },
): ConfigIssue {
  return { path: formatPath(keys), keys, ...problem };
}

/**
 * `issues` with the place in the file of each one that has keys and no place yet, in the
 * order of the file (those without a place last, in their order).
 */
export function placeIssues(
  issues: readonly ConfigIssue[],
  locate: Locate | undefined,
): ConfigIssue[] {
  if (locate === undefined) return [...issues];
  const placed = issues.map((issue) =>
    issue.at !== undefined || issue.keys === undefined
      ? issue
      : { ...issue, at: locate(issue.keys) },
  );
  return placed.sort((a, b) => {
    if (a.at === undefined || b.at === undefined) {
      return (a.at === undefined ? 1 : 0) - (b.at === undefined ? 1 : 0);
    }
    return a.at.line - b.at.line || a.at.column - b.at.column;
  });
}

const MaxShown = 80;

/** `["profiles", 1, "sandbox"]` → `profiles[1].sandbox`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const part of path) {
    if (typeof part === "number") out += `[${part}]`;
    else out += out === "" ? String(part) : `.${String(part)}`;
  }
  return out;
}

/**
 * Renders the value found at `path` for an error message. Only a known non-secret setting
 * ({@link isShownPath}) with a simple value (a number, a boolean, a string) is shown, cut at
 * 80 characters; anything else is named by its type (`a string (not shown)`, `a mapping`), so
 * a token under a mistyped key or where a mapping belongs never reaches the message. A string
 * that looks like a token (`looksLikeToken`) is never shown, whatever key holds it: a token
 * pasted under `name:` stays out of the message too.
 */
export function showValue(value: unknown, path: readonly PropertyKey[]): string {
  if (value === undefined) return "nothing";
  if (value === null) return "null";
  // JSON has no Infinity or NaN: it would print them as null.
  if (typeof value === "number" && !Number.isFinite(value)) return String(value);
  if (Array.isArray(value)) return "a list";
  if (typeof value === "object") return "a mapping";
  const simple =
    typeof value === "string" || typeof value === "number" || typeof value === "boolean";
  if (!simple || !isShownPath(path)) return `${typeName(value)} (not shown)`;
  if (typeof value === "string" && looksLikeToken(value)) {
    return "a string that looks like a token (not shown)";
  }
  const text = JSON.stringify(value);
  return text.length > MaxShown ? `${text.slice(0, MaxShown - 1)}…` : text;
}

function typeName(value: unknown): string {
  if (typeof value === "string") return "a string";
  if (typeof value === "number" || typeof value === "bigint") return "a number";
  if (typeof value === "boolean") return "a boolean";
  return "a value";
}

/** `no such key …`, naming the known key it most likely meant (`tokn` → `token`). */
function unknownKey(key: string, parent: readonly PropertyKey[]): string {
  const base = "no such key (unknown setting; check the spelling)";
  const known = knownKeysAt(parent);
  if (known.length === 0) return base;
  const squash = (name: string) => name.toLowerCase().replace(/[-_]/g, "");
  const wanted = squash(key);
  const best = closest(wanted, known.map(squash));
  const index = known.map(squash).indexOf(best);
  const limit = Math.max(1, Math.floor(wanted.length / 3));
  if (index < 0 || distance(wanted, best) > limit) return base;
  return `no such key (unknown setting; did you mean ${known[index]}?)`;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node: unknown = root;
  for (const part of path) {
    if (node === null || typeof node !== "object") return undefined;
    node = (node as Record<PropertyKey, unknown>)[part];
  }
  return node;
}

const TypeNames: Record<string, string> = {
  boolean: "a boolean (true or false)",
  number: "a number",
  int: "an integer",
  string: "a string",
  array: "a list",
  object: "a mapping",
};

function expectedFor(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      return TypeNames[issue.expected] ?? issue.expected;
    case "invalid_value":
      return `one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    case "invalid_union":
      if ("options" in issue && Array.isArray(issue.options)) {
        return `one of ${issue.options.map((v: unknown) => JSON.stringify(v)).join(", ")}`;
      }
      return issue.message;
    case "too_small":
      if (issue.origin === "array") return `at least ${String(issue.minimum)} item(s)`;
      if (issue.origin === "number" && issue.message.startsWith("Too small")) {
        return `a number ${issue.inclusive ? ">=" : ">"} ${String(issue.minimum)}`;
      }
      // zod's own bound of `.int()`: the safe integers.
      if (issue.origin === "int" && issue.message.startsWith("Too small")) {
        return `a whole number >= ${String(issue.minimum)}`;
      }
      return issue.message;
    case "too_big":
      if (issue.origin === "number" && issue.message.startsWith("Too big")) {
        return `a number ${issue.inclusive ? "<=" : "<"} ${String(issue.maximum)}`;
      }
      if (issue.origin === "int" && issue.message.startsWith("Too big")) {
        return `a whole number <= ${String(issue.maximum)}`;
      }
      return issue.message;
    default:
      return issue.message;
  }
}

/** Turns zod issues into {@link ConfigIssue}s, reading offending values from `raw`. */
export function issuesFromZod(raw: unknown, issues: readonly z.core.$ZodIssue[]): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) {
        const path = [...issue.path, key];
        out.push(
          issueAt(path, {
            got: showValue(valueAt(raw, path), path),
            expected: unknownKey(key, issue.path),
          }),
        );
      }
      continue;
    }
    const path = issue.path;
    const value = valueAt(raw, path);
    out.push(
      issueAt(path, {
        got: showValue(value, path),
        expected: nonFinite(issue, value)
          ? "a finite number"
          : expectedFor(issue) + tokenHint(issue, value, path),
      }),
    );
  }
  return out;
}

/** YAML's `.inf` and `.nan`, and a number too large for a double (`1e400`), where one belongs. */
function nonFinite(issue: z.core.$ZodIssue, value: unknown): boolean {
  return issue.code === "invalid_type" && typeof value === "number" && !Number.isFinite(value);
}

/** A bot token given where its mapping belongs (`telegram: "123:abc"`): say where it goes. */
function tokenHint(issue: z.core.$ZodIssue, value: unknown, path: readonly PropertyKey[]): string {
  if (issue.code !== "invalid_type" || issue.expected !== "object") return "";
  if (typeof value !== "string" || !knownKeysAt(path).includes("token")) return "";
  return ` (a bot token goes under ${formatPath([...path, "token"])})`;
}
