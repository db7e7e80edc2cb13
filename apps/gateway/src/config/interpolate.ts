import { type ConfigIssue, issueAt } from "./errors.js";

/** `$${` (a literal `${`), or a `${…}` reference, or a `${` that is never closed. */
const Token = /\$\$\{|\$\{([^}]*)\}|\$\{/g;
/**
 * The inside of a reference: `NAME` or `NAME:-default`. A default holds no `${`: references do
 * not nest, and the first `}` ends the reference, so `${A:-${B}}` would load as `${B}` (or as
 * A's value and a stray `}`) without a word.
 */
const Reference = /^([A-Za-z_][A-Za-z0-9_]*)(?::-((?:(?!\$\{)[\s\S])*))?$/;
const MaxDepth = 32;

/** The result of {@link interpolate}: the document, and what could not be resolved. */
export interface Interpolated {
  /**
   * The document with every reference replaced. A string with an unresolvable reference is
   * left out (so it reaches neither validation nor the redactor's list of secrets).
   */
  readonly value: unknown;
  readonly issues: readonly ConfigIssue[];
}

/**
 * Resolves environment references in every string value of a parsed config document
 * (docs/configuration.md): `${NAME}` is the variable's value without leading and trailing
 * white space, `${NAME:-text}` falls back to `text` (as written), `$${` is a literal `${`. Keys,
 * numbers and booleans are left alone. A variable that is unset, empty or only white space,
 * and a malformed reference, are issues naming the key path; the issue
 * shows the reference (a variable name, written by the operator), never a value.
 */
export function interpolate(
  raw: unknown,
  variables: Readonly<Record<string, string | undefined>>,
): Interpolated {
  const issues: ConfigIssue[] = [];
  const visit = (value: unknown, path: PropertyKey[], depth: number): unknown => {
    if (typeof value === "string") {
      const resolved = resolveString(value, variables);
      if (typeof resolved === "string") return resolved;
      issues.push(issueAt(path, resolved));
      return undefined;
    }
    if (depth >= MaxDepth || value === null || typeof value !== "object") return value;
    if (Array.isArray(value)) return value.map((item, i) => visit(item, [...path, i], depth + 1));
    const entries: [string, unknown][] = [];
    for (const [key, item] of Object.entries(value)) {
      const resolved = visit(item, [...path, key], depth + 1);
      if (resolved !== undefined || item === undefined) entries.push([key, resolved]);
    }
    // Own properties, whatever the key: assigning `out["__proto__"]` would set the prototype,
    // and the settings under a `__proto__:` key would be taken, unchecked, as the mapping's own.
    return Object.fromEntries(entries);
  };
  const value = visit(raw, [], 0);
  return { value, issues };
}

/** The string with its references resolved, or the first problem found in it. */
function resolveString(
  text: string,
  variables: Readonly<Record<string, string | undefined>>,
): string | Omit<ConfigIssue, "path"> {
  if (!text.includes("${")) return text;
  let problem: Omit<ConfigIssue, "path"> | undefined;
  const out = text.replace(Token, (match: string, inner: string | undefined) => {
    if (match === "$${") return "${";
    const reference = inner === undefined ? null : Reference.exec(inner);
    if (reference === null) {
      problem ??= {
        got: "a malformed ${…} reference",
        expected:
          "${NAME} or ${NAME:-default} with NAME made of letters, digits and _ (write $${ for a literal ${)",
      };
      return match;
    }
    const [, name = "", fallback] = reference;
    // Trimmed as the override variables are (env.ts): an env file or a secrets file often
    // ends its value with a newline, and a token with one is wrong.
    const value = variables[name]?.trim();
    if (value !== undefined && value !== "") return value;
    if (fallback !== undefined) return fallback;
    problem ??= {
      got: `\${${name}}`,
      expected: `the environment variable ${name} to be set (it is unset or empty)`,
    };
    return match;
  });
  return problem ?? out;
}
