import { isUtf8 } from "node:buffer";
import { readFile } from "node:fs/promises";
import { isIP } from "node:net";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { parseListenAddress } from "@mediagate/io";
import type { SandboxSettings } from "@mediagate/sandbox";
import { needsAllowedHosts } from "@mediagate/web/hosts";
import { LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { Defaults } from "../defaults.js";
import type { Redactor } from "../redact.js";
import { resolveApprovals } from "./approvals-schema.js";
import { resolveCluster } from "./cluster-schema.js";
import { ConfigDefaults } from "./defaults.js";
import type { GatewayEnv } from "./env.js";
import {
  ConfigError,
  type ConfigIssue,
  formatPath,
  issueAt,
  issuesFromZod,
  placeIssues,
  showValue,
} from "./errors.js";
import { interpolate } from "./interpolate.js";
import { type Locate, locatorOf } from "./locate.js";
import { resolveSchedules } from "./schedules-schema.js";
import { type ConfigFile, configFileSchema, type ProfileFile } from "./schema.js";
import { secretsOfConfig, secretsOfEnv, secretsOfRawConfig } from "./secrets.js";
import { resolveStore } from "./store-schema.js";
import type {
  AgentSettings,
  DiscordSettings,
  GatewayConfig,
  ModelSettings,
  ProfileConfig,
  TelegramSettings,
} from "./types.js";

/** Label used in errors when the config did not come from a file. */
export const EmbeddedSource = "<embedded defaults>";

/**
 * Reads and validates the config file. The path is `path`, else `env.mediagateConfig`;
 * with neither, the embedded defaults are used (default profile, shell agent, Docker).
 * `redactor` learns every secret-looking value of the document as soon as it is parsed, before
 * validation, so whatever the caller prints afterwards (this error too) can be scrubbed.
 * @throws ConfigError naming the file, and for each problem its `file:line:column` (the key
 * that holds it), the key path, what was there (values of known non-secret settings only) and
 * what is expected.
 */
export async function loadConfig(options: {
  path?: string | undefined;
  env: GatewayEnv;
  redactor?: Redactor | undefined;
}) {
  const file = options.path ?? options.env.mediagateConfig;
  if (file === undefined) return resolveConfig({}, options);
  const absolute = resolve(file);
  let bytes: Buffer;
  try {
    bytes = await readFile(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new ConfigError(absolute, [
      {
        path: "",
        got: code === "ENOENT" ? "a missing file" : `an unreadable file (${String(code)})`,
        expected: "a readable YAML config file",
      },
    ]);
  }
  const { value, locate } = parseYaml(utf8Text(bytes, absolute), absolute);
  return resolveConfig(value, { ...options, source: absolute, locate });
}

/**
 * The file's text. Bytes that are not UTF-8 (a file saved as Latin-1) are refused, naming the
 * first line that has one, instead of being read as U+FFFD: `home: /srv/bücher` would
 * otherwise make a directory of another name, and a prompt or token would be quietly wrong.
 * The line is not quoted (it could hold a token).
 */
function utf8Text(bytes: Buffer, source: string): string {
  if (isUtf8(bytes)) return bytes.toString("utf8");
  // A newline byte is never part of a multi-byte UTF-8 character: each line is checked alone.
  let line = 1;
  let start = 0;
  for (;;) {
    const end = bytes.indexOf(0x0a, start);
    if (!isUtf8(bytes.subarray(start, end === -1 ? bytes.length : end)) || end === -1) break;
    line++;
    start = end + 1;
  }
  throw new ConfigError(source, [
    {
      path: "",
      at: { line, column: 1 },
      got: "text that is not UTF-8",
      expected: "a UTF-8 file (convert it, e.g. iconv -f latin1 -t utf-8)",
    },
  ]);
}

/** A parsed config file: its value, and where each of its keys is written. */
export interface ParsedYaml {
  readonly value: unknown;
  readonly locate: Locate;
}

/**
 * Parses YAML text; syntax errors, and the parser's warnings (an unresolved tag such as
 * `!secret x`), become a {@link ConfigError} naming `file:line:column`. The
 * YAML parser's own messages can quote the source (a tag, a scalar, the line around the error),
 * so only their error code and position are kept: a document too broken to parse gives up no
 * secret it holds.
 */
export function parseYaml(text: string, source: string): ParsedYaml {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { prettyErrors: true, lineCounter });
  // The parser's warnings are errors here too: each one means the file does not load as written.
  const problems = [
    ...doc.errors.map((e) => ({
      at: e.linePos,
      got: "invalid YAML",
      expected: `valid YAML (${e.code.toLowerCase().replaceAll("_", " ")})`,
    })),
    ...doc.warnings.map((w) => ({ at: w.linePos, ...yamlWarning(w.code, w.message) })),
  ];
  if (problems.length > 0) {
    throw new ConfigError(
      source,
      problems.map(({ at, got, expected }) => ({
        path: "",
        at: at ? { line: at[0].line, column: at[0].col } : undefined,
        got,
        expected,
      })),
    );
  }
  try {
    return { value: doc.toJS() ?? {}, locate: locatorOf(doc, lineCounter) };
  } catch {
    throw new ConfigError(source, [
      {
        path: "",
        got: "YAML that cannot be loaded",
        expected: "plain YAML (check anchors and aliases)",
      },
    ]);
  }
}

/** A tag as written (`!secret`, `!!foo`, `tag:example.com,2000:x`): syntax, never a value. */
const TagName = /^Unresolved tag: (![\w.:/!-]{0,60}|tag:[\w.,:/!-]{1,60}) /;

/**
 * What a YAML warning means for the file. A tag the parser does not resolve (Home Assistant's
 * `!secret name`, a custom `!env`) would load the text after it as the value (the bare name
 * as the token); nothing but `${NAME}` reads a value from elsewhere. The parser's message is
 * quoted only for the tag's name (it can quote the source).
 */
function yamlWarning(code: string, message: string): { got: string; expected: string } {
  if (code === "TAG_RESOLVE_FAILED") {
    const tag = TagName.exec(message)?.[1];
    return {
      got: tag === undefined ? "a YAML tag" : `the YAML tag ${tag}`,
      expected:
        "no tag: mediagate resolves none (write ${NAME} to read a secret from the environment variable NAME)",
    };
  }
  return {
    got: `YAML the parser warns about (${code.toLowerCase().replaceAll("_", " ")})`,
    expected: "plain YAML (remove or rewrite that part)",
  };
}

/**
 * Validates an already-parsed config object and applies defaults and env overrides.
 *
 * First every `${NAME}` in a string value is replaced by that environment variable
 * (`${NAME:-text}` falls back to `text`, `$${` is a literal `${`; docs/configuration.md); an
 * unset variable is an error naming the key and the variable.
 *
 * Env overrides (`TELEGRAM_*`, `DISCORD_*`) apply to the primary profile — the first one listed
 * (the only one, or the embedded `default`) — and win over the file; an API-root or gateway-URL
 * override without a token (from file or env) enables nothing. Other profiles take their tokens
 * from the file only. `home` in the file wins over `MEDIAGATE_HOME`; relative paths resolve
 * against the config file's directory. The profile named `default` lives in the root home,
 * every other one in `<root>/profiles/<name>` (docs/sandbox.md). Admins count as allowed users.
 * `redactor` first learns every secret-looking value of the environment and of the document
 * (its references resolved, so a secret from the environment is known like an inline one),
 * then the resolved tokens and keys. `locate` (from {@link parseYaml}) places every problem at
 * the key in the file that holds it; a value from `${NAME}` is placed at the key that names
 * the variable.
 */
export function resolveConfig(
  raw: unknown,
  options: {
    env: GatewayEnv;
    source?: string | undefined;
    redactor?: Redactor | undefined;
    locate?: Locate | undefined;
  },
): GatewayConfig {
  const source = options.source ?? EmbeddedSource;
  const invalid = (issues: readonly ConfigIssue[]) =>
    new ConfigError(source, placeIssues(issues, options.locate));
  const resolved = interpolate(raw, options.env.variables);
  const doc = resolved.value;
  options.redactor?.add(secretsOfEnv(options.env)).add(secretsOfRawConfig(doc));
  if (resolved.issues.length > 0) throw invalid(resolved.issues);
  const parsed = configFileSchema.safeParse(doc, { reportInput: true });
  if (!parsed.success) throw invalid(issuesFromZod(doc, parsed.error.issues));
  const file: ConfigFile = parsed.data;
  const env = options.env;
  const baseDir = options.source ? dirname(options.source) : process.cwd();
  const home = resolveHome(file.home, env, baseDir);
  const entries: ProfileFile[] = file.profiles ?? [{ name: ConfigDefaults.profileName }];
  const withEnv = entries.map((entry, index) =>
    index === 0 ? applyEnvOverrides(entry, env) : entry,
  );
  const profiles = withEnv.map((entry) => resolveProfile(entry, home, baseDir));
  const web = resolveWeb(file.web);
  const issues = [
    ...envUrlChecks(withEnv[0], env),
    ...missingTokens(withEnv),
    ...crossChecks(profiles, env),
    ...(web === undefined ? [] : webChecks(web)),
    ...listenChecks(file.health?.listen, web, profiles),
  ];
  if (issues.length > 0) throw invalid(issues);
  const config: GatewayConfig = {
    home,
    source: options.source,
    concurrency: file.concurrency ?? ConfigDefaults.concurrency,
    profiles,
    dockerHost: env.dockerHost,
    drainTimeoutSeconds: file.drainTimeoutSeconds ?? ConfigDefaults.drainTimeoutSeconds,
    delivery: {
      ambiguousSends: file.delivery?.ambiguousSends ?? ConfigDefaults.delivery.ambiguousSends,
      maxAttempts: file.delivery?.maxAttempts ?? ConfigDefaults.delivery.maxAttempts,
      maxAgeSeconds: file.delivery?.maxAgeSeconds ?? ConfigDefaults.delivery.maxAgeSeconds,
      maxTextChunks: file.delivery?.maxTextChunks ?? ConfigDefaults.delivery.maxTextChunks,
    },
    rerunInterrupted: file.recovery?.rerunInterrupted ?? ConfigDefaults.rerunInterrupted,
    healthListen: file.health?.listen,
    web,
    logLevel: file.log?.level,
    store: resolveStore(file.store),
    cluster: resolveCluster(file.cluster),
  };
  options.redactor?.add(secretsOfConfig(config));
  return config;
}

function resolveWeb(web: ConfigFile["web"]): GatewayConfig["web"] {
  if (web === undefined) return undefined;
  const listen = web.listen ?? ConfigDefaults.webListen;
  return web.allowedHosts === undefined ? { listen } : { listen, allowedHosts: web.allowedHosts };
}

/** A wildcard `web.listen` must name the console's hosts (docs/web-console.md, "DNS rebinding"). */
function webChecks(web: NonNullable<GatewayConfig["web"]>): ConfigIssue[] {
  if (!needsAllowedHosts(parseListenAddress(web.listen).host, web.allowedHosts)) return [];
  return [
    {
      path: "web.allowedHosts",
      got: `nothing, with web.listen "${web.listen}" (every address of this host)`,
      expected: `the host names browsers use to reach the console, e.g. allowedHosts: ["gateway.example.org", "192.168.1.20"] ([] for the loopback names only, e.g. behind a port published on the host's 127.0.0.1)`,
    },
  ];
}

/**
 * Two of the gateway's listeners (the health endpoint, the web console, each profile's Telegram
 * webhook) on one `host:port`: the second would fail the start with a bare EADDRINUSE, as if
 * another program held the port. A wildcard host (`0.0.0.0`, `::`) overlaps the addresses of
 * its family (`::` every address); port 0 (a free port each) never collides.
 */
function listenChecks(
  health: string | undefined,
  web: GatewayConfig["web"],
  profiles: readonly ProfileConfig[],
): ConfigIssue[] {
  const listeners: { keys: PropertyKey[]; listen: string }[] = [];
  if (health !== undefined) listeners.push({ keys: ["health", "listen"], listen: health });
  if (web !== undefined) listeners.push({ keys: ["web", "listen"], listen: web.listen });
  profiles.forEach((profile, i) => {
    const webhook = profile.telegram?.webhook;
    if (webhook === undefined) return;
    listeners.push({
      keys: ["profiles", i, "telegram", "webhook", "listen"],
      listen: webhook.listen ?? Defaults.telegram.webhookListen,
    });
  });
  const taken: { keys: PropertyKey[]; host: string; port: number }[] = [];
  const issues: ConfigIssue[] = [];
  for (const { keys, listen } of listeners) {
    const { host, port } = parseListenAddress(listen);
    if (port === 0) continue;
    const other = taken.find((t) => t.port === port && hostsOverlap(t.host, host));
    if (other === undefined) {
      taken.push({ keys, host, port });
      continue;
    }
    issues.push(
      issueAt(keys, {
        got: `${JSON.stringify(listen)}, the address of ${formatPath(other.keys)}`,
        expected: "a host:port of its own (two listeners cannot share one)",
      }),
    );
  }
  return issues;
}

function hostsOverlap(a: string, b: string): boolean {
  const [x, y] = [a.toLowerCase(), b.toLowerCase()];
  if (x === y || x === "::" || y === "::") return true;
  return (x === "0.0.0.0" && isIP(y) === 4) || (y === "0.0.0.0" && isIP(x) === 4);
}

function expandHome(path: string, env: GatewayEnv, baseDir: string): string {
  if (path === "~") return env.userHome;
  if (path.startsWith("~/")) return join(env.userHome, path.slice(2));
  return isAbsolute(path) ? path : resolve(baseDir, path);
}

function resolveHome(fromFile: string | undefined, env: GatewayEnv, baseDir: string): string {
  if (fromFile !== undefined) return expandHome(fromFile, env, baseDir);
  if (env.mediagateHome !== undefined) return expandHome(env.mediagateHome, env, process.cwd());
  return join(env.userHome, ConfigDefaults.homeDirName);
}

function applyEnvOverrides(entry: ProfileFile, env: GatewayEnv): ProfileFile {
  let out = entry;
  const tg = { ...entry.telegram };
  if (env.telegramBotToken !== undefined) tg.token = env.telegramBotToken;
  if (env.telegramApiRoot !== undefined) tg.apiRoot = env.telegramApiRoot;
  if (tg.token !== undefined) out = { ...out, telegram: tg };
  const dc = { ...entry.discord };
  if (env.discordBotToken !== undefined) dc.token = env.discordBotToken;
  if (env.discordApiRoot !== undefined) dc.apiRoot = env.discordApiRoot;
  if (env.discordGatewayUrl !== undefined) dc.gatewayUrl = env.discordGatewayUrl;
  if (dc.token !== undefined) out = { ...out, discord: dc };
  return out;
}

/** The URL variables of the environment: what they set, and the schemes they take. */
const EnvUrls = [
  {
    variable: "TELEGRAM_API_ROOT",
    platform: "telegram",
    key: "apiRoot",
    value: (env: GatewayEnv) => env.telegramApiRoot,
    schema: z.url({ protocol: /^https?$/ }),
    example: "an http(s) URL, e.g. http://127.0.0.1:8081",
  },
  {
    variable: "DISCORD_API_ROOT",
    platform: "discord",
    key: "apiRoot",
    value: (env: GatewayEnv) => env.discordApiRoot,
    schema: z.url({ protocol: /^https?$/ }),
    example: "an http(s) URL, e.g. http://127.0.0.1:8081",
  },
  {
    variable: "DISCORD_GATEWAY_URL",
    platform: "discord",
    key: "gatewayUrl",
    value: (env: GatewayEnv) => env.discordGatewayUrl,
    schema: z.url({ protocol: /^wss?$/ }),
    example: "a ws(s) URL, e.g. ws://127.0.0.1:8080",
  },
] as const;

/**
 * The URL variables that set the primary profile's channel (its token set): they bypass the
 * file's schema, so they are checked here, naming the variable. The value is not shown (a URL
 * can carry a password).
 */
function envUrlChecks(primary: ProfileFile | undefined, env: GatewayEnv): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const { variable, platform, key, value, schema, example } of EnvUrls) {
    const url = value(env);
    if (url === undefined || primary?.[platform] === undefined) continue;
    if (schema.safeParse(url).success) continue;
    issues.push({
      path: variable,
      got: "a value (not shown)",
      expected: `${example} (the environment variable sets profiles[0].${platform}.${key})`,
    });
  }
  return issues;
}

function resolveProfile(entry: ProfileFile, root: string, baseDir: string): ProfileConfig {
  const s = entry.sandbox ?? {};
  const d = ConfigDefaults.sandbox;
  const sandbox: SandboxSettings = {
    image: s.image ?? d.image,
    persistent: s.persistent ?? d.persistent,
    filesystem: s.filesystem ?? d.filesystem,
    persistAcrossProcesses: s.persistAcrossProcesses ?? d.persistAcrossProcesses,
    orphanReaper: s.orphanReaper ?? d.orphanReaper,
    lifetimeSeconds: s.lifetimeSeconds ?? d.lifetimeSeconds,
    network: s.network ?? d.network,
    memoryBytes: s.memoryBytes ?? d.memoryBytes,
    nanoCpus: s.nanoCpus,
    pidsLimit: s.pidsLimit ?? d.pidsLimit,
    maxOpenShells: s.maxOpenShells,
    shellChannel: s.shellChannel ?? "auto",
    warmPool: s.warmPool ?? d.warmPool,
    tmpfsBytes: s.tmpfsBytes ?? d.tmpfsBytes,
    scratchBytes: s.scratchBytes ?? d.scratchBytes,
    diskLimitBytes: s.diskLimitBytes ?? d.diskLimitBytes,
    volumes: s.volumes ?? [],
    sharedKey: (s.sharedKey ?? d.sharedKey).trim(),
    user: s.user ?? d.user,
    sessionProcessLimit: s.sessionProcessLimit ?? d.sessionProcessLimit,
  };
  const agent: AgentSettings =
    entry.agent?.kind === "openai"
      ? openaiAgentSettings(entry.agent)
      : {
          kind: "shell",
          ...(entry.agent?.approvals === undefined
            ? {}
            : { approvals: resolveApprovals(entry.agent.approvals) }),
          ...(entry.agent?.maxReplyChars === undefined
            ? {}
            : { maxReplyChars: entry.agent.maxReplyChars }),
        };
  const telegram: TelegramSettings | undefined =
    entry.telegram?.token !== undefined
      ? {
          ...entry.telegram,
          token: entry.telegram.token,
          groups: {
            requireMention:
              entry.telegram.groups?.requireMention ?? ConfigDefaults.telegramGroups.requireMention,
            ...(entry.telegram.groups?.allowedChats === undefined
              ? {}
              : { allowedChats: entry.telegram.groups.allowedChats.map(String) }),
          },
          commands: {
            register: entry.telegram.commands?.register ?? ConfigDefaults.registerCommands,
          },
          ...(entry.telegram.webhook?.certificate === undefined
            ? {}
            : {
                webhook: {
                  ...entry.telegram.webhook,
                  certificate: resolve(baseDir, entry.telegram.webhook.certificate),
                },
              }),
        }
      : undefined;
  const discord: DiscordSettings | undefined =
    entry.discord?.token !== undefined
      ? {
          ...entry.discord,
          token: entry.discord.token,
          channels: entry.discord.channels ?? [],
          commands: {
            register: entry.discord.commands?.register ?? ConfigDefaults.registerCommands,
          },
        }
      : undefined;
  return {
    name: entry.name,
    home: entry.name === ConfigDefaults.profileName ? root : join(root, "profiles", entry.name),
    telegram,
    discord,
    allowedUsers: entry.allowedUsers ?? [],
    admins: entry.admins ?? [],
    access: entry.access ?? ConfigDefaults.access,
    pairing: {
      codeTtlSeconds: entry.pairing?.codeTtlSeconds ?? ConfigDefaults.pairing.codeTtlSeconds,
      maxPendingCodes: entry.pairing?.maxPendingCodes ?? ConfigDefaults.pairing.maxPendingCodes,
      maxFailedApprovals:
        entry.pairing?.maxFailedApprovals ?? ConfigDefaults.pairing.maxFailedApprovals,
      lockSeconds: entry.pairing?.lockSeconds ?? ConfigDefaults.pairing.lockSeconds,
    },
    agent,
    format: entry.format ?? ConfigDefaults.format[agent.kind],
    sandbox,
    media: { allowDirs: (entry.media?.allowDirs ?? []).map((p) => resolve(baseDir, p)) },
    groupSessionsPerUser: entry.groupSessionsPerUser ?? ConfigDefaults.groupSessionsPerUser,
    threadSessionsPerUser: entry.threadSessionsPerUser ?? ConfigDefaults.threadSessionsPerUser,
    stillWorkingAfterSeconds:
      entry.stillWorkingAfterSeconds ?? ConfigDefaults.stillWorkingAfterSeconds,
    busyMode: entry.busyMode ?? ConfigDefaults.busyMode,
    maxQueuedMessages: entry.maxQueuedMessages ?? ConfigDefaults.maxQueuedMessages,
    progress: {
      enabled: entry.progress?.enabled ?? ConfigDefaults.progress.enabled,
      afterSeconds: entry.progress?.afterSeconds ?? ConfigDefaults.progress.afterSeconds,
      everySeconds: entry.progress?.everySeconds ?? ConfigDefaults.progress.everySeconds,
    },
    reactions: {
      enabled: entry.reactions?.enabled ?? ConfigDefaults.reactions.enabled,
      groups: entry.reactions?.groups ?? ConfigDefaults.reactions.groups,
      afterMs: entry.reactions?.afterMs ?? ConfigDefaults.reactions.afterMs,
    },
    stream: entry.stream ?? ConfigDefaults.stream,
    schedules: resolveSchedules(entry.schedules),
  };
}

/**
 * A `telegram:` or `discord:` block without a token (after env overrides) is a mistake, not a
 * request for the console: the operator meant to run that channel.
 */
function missingTokens(entries: readonly ProfileFile[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  entries.forEach((entry, i) => {
    for (const platform of ["telegram", "discord"] as const) {
      if (entry[platform] === undefined || entry[platform].token !== undefined) continue;
      issues.push(
        issueAt(["profiles", i, platform, "token"], {
          got: "nothing",
          expected: `a bot token (e.g. token: \${${platform.toUpperCase()}_BOT_TOKEN} to read it from the environment), or no ${platform} block`,
        }),
      );
    }
  });
  return issues;
}

/** What a second connection with a bot's token does, for the duplicate-token error. */
const SharedTokenEffect = {
  telegram: "a second poller of one bot gets 409 Conflict",
  discord: "both connections of one bot would answer every message",
} as const;

/** Env variables that set the first profile's tokens, to explain a duplicate they caused. */
const TokenEnvVariable = { telegram: "TELEGRAM_BOT_TOKEN", discord: "DISCORD_BOT_TOKEN" } as const;

function crossChecks(profiles: readonly ProfileConfig[], env: GatewayEnv): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  const seen = new Map<string, number>();
  const tokens = { telegram: new Map<string, number>(), discord: new Map<string, number>() };
  const fromEnv = {
    telegram: env.telegramBotToken !== undefined,
    discord: env.discordBotToken !== undefined,
  };
  profiles.forEach((p, i) => {
    const first = seen.get(p.name);
    if (first !== undefined) {
      issues.push(
        issueAt(["profiles", i, "name"], {
          got: showValue(p.name, ["profiles", i, "name"]),
          expected: `a unique profile name (profiles[${first}] already uses it)`,
        }),
      );
    } else seen.set(p.name, i);
    if (profiles.length > 1 && p.telegram === undefined && p.discord === undefined) {
      issues.push(
        issueAt(["profiles", i], {
          got: "no telegram.token and no discord.token",
          expected:
            "a channel token (only a lone profile may run without one, on the local console)",
        }),
      );
    }
    for (const platform of ["telegram", "discord"] as const) {
      const token = p[platform]?.token;
      if (token === undefined) continue;
      const owner = tokens[platform].get(token);
      if (owner === undefined) {
        tokens[platform].set(token, i);
        continue;
      }
      const envNote =
        owner === 0 && fromEnv[platform]
          ? `; ${TokenEnvVariable[platform]} sets profiles[0]'s token`
          : "";
      issues.push(
        issueAt(["profiles", i, platform, "token"], {
          got: `the bot token of profile ${JSON.stringify(profiles[owner]?.name)} (profiles[${owner}])`,
          expected: `a bot token of its own for profile ${JSON.stringify(p.name)}: one bot serves one profile (${SharedTokenEffect[platform]}${envNote})`,
        }),
      );
    }
  });
  return issues;
}

type OpenAIAgentFile = Extract<NonNullable<ProfileFile["agent"]>, { kind: "openai" }>;

/**
 * `agent` of kind openai, defaults applied: the single-model form becomes a one-entry
 * `models` list named after its model, its `contextTokens` the entry's
 * (docs/models-and-usage.md).
 */
function openaiAgentSettings(file: OpenAIAgentFile): AgentSettings {
  const {
    baseUrl,
    apiKey,
    model,
    models,
    default: chosen,
    fallback,
    memberModels,
    approvals,
    contextTokens,
    ...rest
  } = file;
  const entries: ModelSettings[] =
    models === undefined
      ? [
          {
            name: model ?? "",
            baseUrl: baseUrl ?? "",
            model: model ?? "",
            ...(apiKey === undefined ? {} : { apiKey }),
            ...(contextTokens === undefined ? {} : { contextTokens }),
          },
        ]
      : models.map(({ timeoutSeconds, ...entry }) => ({
          ...entry,
          ...(timeoutSeconds === undefined ? {} : { timeoutMs: timeoutSeconds * 1000 }),
        }));
  return {
    ...rest,
    models: entries,
    defaultModel: chosen ?? entries[0]!.name,
    fallback: fallback ?? [],
    ...(memberModels === undefined ? {} : { memberModels }),
    maxToolRounds: file.maxToolRounds ?? ConfigDefaults.openaiMaxToolRounds,
    approvals: approvals === undefined ? undefined : resolveApprovals(approvals),
  };
}
