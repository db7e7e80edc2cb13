import type { z } from "zod";

/** One problem in the configuration: where, what was there, what should be. */
export interface ConfigIssue {
  /** Key path such as `profiles[1].sandbox.persistent` (empty for the document root). */
  readonly path: string;
  /** The offending value, already rendered and redacted for display. */
  readonly got: string;
  readonly expected: string;
}

/** The configuration is unusable. `message` lists every issue, one per line, with the file. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(
    /** Config file path, or `<embedded defaults>` / `<object>` when there was no file. */
    readonly file: string,
    readonly issues: readonly ConfigIssue[],
  ) {
    super(
      issues.length === 1
        ? `invalid config ${file}: ${formatIssue(issues[0]!)}`
        : `invalid config ${file}:\n${issues.map((i) => `  - ${formatIssue(i)}`).join("\n")}`,
    );
  }
}

/** `path: got X, expected Y`. */
export function formatIssue(issue: ConfigIssue): string {
  const what = `got ${issue.got}, expected ${issue.expected}`;
  return issue.path === "" ? what : `${issue.path}: ${what}`;
}

const SecretKeys = new Set(["token", "apiKey"]);
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

/** Renders a value for an error message; secrets (tokens, API keys) never appear. */
export function showValue(value: unknown, path: readonly PropertyKey[]): string {
  const last = path[path.length - 1];
  if (value === undefined) return "nothing";
  if (typeof last === "string" && SecretKeys.has(last)) return '"<redacted>"';
  let text: string;
  try {
    text = JSON.stringify(value, (key, v: unknown) => (SecretKeys.has(key) ? "<redacted>" : v));
  } catch {
    text = String(value);
  }
  return text.length > MaxShown ? `${text.slice(0, MaxShown - 1)}…` : text;
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
      if (issue.origin === "number") {
        return issue.message.startsWith("Too small") ? `a number > 0` : issue.message;
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
        out.push({
          path: formatPath(path),
          got: showValue(valueAt(raw, path), path),
          expected: "no such key (unknown setting; check the spelling)",
        });
      }
      continue;
    }
    const path = issue.path;
    out.push({
      path: formatPath(path),
      got: showValue(valueAt(raw, path), path),
      expected: expectedFor(issue),
    });
  }
  return out;
}
