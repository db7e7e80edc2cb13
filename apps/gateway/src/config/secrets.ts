import { z } from "zod";
import { looksLikeToken } from "../redact.js";
import type { GatewayEnv } from "./env.js";
import { configFileSchema } from "./schema.js";
import type { GatewayConfig } from "./types.js";

/**
 * Settings whose values are never secret, so an error may show them (when simple: a number,
 * a boolean, a short string). Everything else — tokens, API keys, URLs (they can carry
 * credentials), any key the schema does not know, a value where a mapping was expected — is
 * described by its type only, and its strings are cut out of every message and log line.
 * A list key here covers its items. A setting added to the schema stays hidden until it is
 * listed here: forgetting it costs a less helpful error, never a leaked secret.
 */
const ShownKeys: ReadonlySet<string> = new Set([
  "home",
  "concurrency",
  "name",
  "photoMaxBytes",
  "uploadMaxBytes",
  "channels",
  "allowedUsers",
  "admins",
  "kind",
  "model",
  "maxToolRounds",
  "contextTokens",
  "image",
  "persistent",
  "filesystem",
  "persistAcrossProcesses",
  "orphanReaper",
  "lifetimeSeconds",
  "network",
  "memoryBytes",
  "nanoCpus",
  "pidsLimit",
  "volumes",
  "sharedKey",
  "user",
  "sessionProcessLimit",
  "diskLimitBytes",
  "tmpfsBytes",
  "scratchBytes",
  "allowDirs",
  "groupSessionsPerUser",
  "threadSessionsPerUser",
  "stillWorkingAfterSeconds",
  "busyMode",
  "maxQueuedMessages",
  "access",
  "codeTtlSeconds",
  "maxPendingCodes",
  "maxFailedApprovals",
  "lockSeconds",
  "enabled",
  "afterSeconds",
  "everySeconds",
  "maxOpenShells",
  "shellChannel",
  "warmPool",
  "drainTimeoutSeconds",
  "ambiguousSends",
  "maxAttempts",
  "maxAgeSeconds",
  "rerunInterrupted",
  "listen",
  "allowedHosts",
  "pollTimeoutSeconds",
  "catchUpMaxMessages",
  "level",
  "downloadMaxBytes",
  "localFiles",
  "vision",
  // agent.models, agent.budget (docs/models-and-usage.md)
  "default",
  "fallback",
  "memberModels",
  "contextTokens",
  "input",
  "output",
  "cachedInput",
  "timeoutSeconds",
  "dailyTokens",
  "dailyCost",
  "maxConnections",
  // store (docs/store.md); its url is a secret as a whole
  "statementTimeoutMs",
  "queryTimeoutMs",
  "connectTimeoutMs",
  "idleTimeoutMs",
  // cluster (docs/cluster.md)
  "replicaId",
]);

/** Settings holding a URL: the URL is not secret, its user, password and query values may be. */
const UrlKeys: ReadonlySet<string> = new Set(["apiRoot", "gatewayUrl", "baseUrl", "url"]);

type Schema = z.core.$ZodType;

function unwrap(schema: Schema): Schema {
  let inner = schema;
  while (
    inner instanceof z.ZodOptional ||
    inner instanceof z.ZodNullable ||
    inner instanceof z.ZodDefault
  ) {
    inner = inner.unwrap();
  }
  return inner;
}

/** The schema of `key` below `schema`, when the config schema defines it. */
function childOf(schema: Schema | undefined, key: PropertyKey): Schema | undefined {
  if (schema === undefined) return undefined;
  const inner = unwrap(schema);
  if (inner instanceof z.ZodObject) {
    const shape: Record<string, Schema> = inner.shape;
    return typeof key === "string" && Object.hasOwn(shape, key) ? shape[key] : undefined;
  }
  if (inner instanceof z.ZodArray) return typeof key === "number" ? inner.element : undefined;
  if (inner instanceof z.ZodUnion) {
    for (const option of inner.options as readonly Schema[]) {
      const found = childOf(option, key);
      if (found !== undefined) return found;
    }
  }
  return undefined;
}

function schemaAt(path: readonly PropertyKey[]): Schema | undefined {
  let schema: Schema | undefined = configFileSchema;
  for (const key of path) schema = childOf(schema, key);
  return schema;
}

/** The setting a path names: its last key, or the list's key for a list item. */
function settingOf(path: readonly PropertyKey[]): string | undefined {
  for (let i = path.length - 1; i >= 0; i--) {
    const key = path[i];
    if (typeof key === "string") return key;
  }
  return undefined;
}

/**
 * Whether the value at `path` of a config document is a known non-secret setting, so an
 * error may show it: the schema defines the path and its setting is in {@link ShownKeys}.
 */
export function isShownPath(path: readonly PropertyKey[]): boolean {
  const setting = settingOf(path);
  return setting !== undefined && ShownKeys.has(setting) && schemaAt(path) !== undefined;
}

/** The keys the schema knows in the mapping at `path` (every option of a union), for hints. */
export function knownKeysAt(path: readonly PropertyKey[]): string[] {
  const schema = schemaAt(path);
  if (schema === undefined) return [];
  const inner = unwrap(schema);
  const options = inner instanceof z.ZodUnion ? (inner.options as readonly Schema[]) : [inner];
  const keys = new Set<string>();
  for (const option of options) {
    const object = unwrap(option);
    if (object instanceof z.ZodObject) for (const key of Object.keys(object.shape)) keys.add(key);
  }
  return [...keys];
}

/**
 * Every secret-looking string of a raw (unvalidated) config document: all strings and numbers
 * except the values of known non-secret settings ({@link isShownPath}) that do not look like a
 * token (`looksLikeToken`: one pasted under `name:` is still learnt); of a URL setting, its
 * user, password and query values. Unknown keys, mistyped keys and a token given where a
 * mapping belongs are all covered, so a redactor fed with these never prints them.
 */
export function secretsOfRawConfig(raw: unknown): string[] {
  const out: string[] = [];
  const visit = (value: unknown, path: PropertyKey[], depth: number): void => {
    if (depth > 32) return;
    if (typeof value === "string" || typeof value === "number" || typeof value === "bigint") {
      const text = String(value);
      const setting = settingOf(path);
      if (isStoreUrl(path)) {
        out.push(...storeUrlSecrets(text));
      } else if (setting !== undefined && UrlKeys.has(setting) && schemaAt(path) !== undefined) {
        out.push(...secretsOfUrl(text));
      } else if (!isShownPath(path) || looksLikeToken(text)) out.push(text);
      return;
    }
    if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) visit(item, [...path, index], depth + 1);
      return;
    }
    if (value !== null && typeof value === "object") {
      for (const [key, item] of Object.entries(value)) visit(item, [...path, key], depth + 1);
    }
  };
  visit(raw, [], 0);
  return out;
}

/**
 * `store.url`: the database URL is a secret as a whole (host names of a private network, the
 * user and password; docs/store.md), not only its credentials.
 */
function isStoreUrl(path: readonly PropertyKey[]): boolean {
  return path.length === 2 && path[0] === "store" && path[1] === "url";
}

/**
 * The secrets of `store.url`: the whole URL, its password and its query values. Not its user
 * name: a role is often called `mediagate`, and cutting that word out of every line would
 * mangle them while hiding nothing.
 */
function storeUrlSecrets(text: string): string[] {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return [text];
  }
  const parts = [url.password, ...url.searchParams.values()].filter((part) => part !== "");
  return [text, ...parts.flatMap((part) => [part, safeDecode(part)])];
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}

function secretsOfUrl(text: string): string[] {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return [text];
  }
  const parts = [url.username, url.password, ...url.searchParams.values()];
  return parts.flatMap((part) => {
    if (part === "") return [];
    let decoded = part;
    try {
      decoded = decodeURIComponent(part);
    } catch {}
    return decoded === part ? [part] : [part, decoded];
  });
}

/** The secrets of a validated config (bot tokens and API keys, after env overrides). */
export function secretsOfConfig(config: GatewayConfig): string[] {
  const out: string[] = [];
  if (config.store.kind === "postgres") out.push(...storeUrlSecrets(config.store.url));
  for (const p of config.profiles) {
    if (p.telegram) out.push(p.telegram.token, ...urlSecrets(p.telegram.apiRoot));
    if (p.discord) {
      out.push(p.discord.token, ...urlSecrets(p.discord.apiRoot));
      out.push(...urlSecrets(p.discord.gatewayUrl));
    }
    if (p.agent.kind === "openai") {
      for (const model of p.agent.models) {
        if (model.apiKey !== undefined) out.push(model.apiKey);
        out.push(...urlSecrets(model.baseUrl));
      }
    }
  }
  return out;
}

function urlSecrets(url: string | undefined): string[] {
  return url === undefined ? [] : secretsOfUrl(url);
}

/** The secrets the environment carries (bot tokens), registered before any config is read. */
export function secretsOfEnv(env: GatewayEnv): string[] {
  return [env.telegramBotToken, env.discordBotToken].filter((v) => v !== undefined);
}
