import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { Redacted, Redactor } from "../redact.js";
import { emptyEnv, type GatewayEnv, readEnv } from "./env.js";
import { ConfigError } from "./errors.js";
import { loadConfig, parseYaml, resolveConfig } from "./load.js";

const env: GatewayEnv = { ...emptyEnv("/home/u") };

function errorOf(raw: unknown, e: GatewayEnv = env): ConfigError {
  try {
    resolveConfig(raw, { env: e, source: "/etc/mediagate.yaml" });
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("resolveConfig", () => {
  it("applies the embedded defaults with no config at all", () => {
    const config = resolveConfig({}, { env });
    expect(config.home).toBe("/home/u/.mediagate");
    expect(config.concurrency).toBe(16);
    expect(config.profiles).toHaveLength(1);
    const [p] = config.profiles;
    expect(p?.name).toBe("default");
    expect(p?.home).toBe("/home/u/.mediagate");
    expect(p?.agent).toEqual({ kind: "shell" });
    expect(p?.sandbox).toMatchObject({
      image: "mediagate-sandbox:local",
      persistent: true,
      filesystem: "bind",
      network: "none",
      pidsLimit: 512,
      memoryBytes: 1024 * 1024 * 1024,
      tmpfsBytes: 512 * 1024 * 1024,
      scratchBytes: 256 * 1024 * 1024,
      diskLimitBytes: 4 * 1024 * 1024 * 1024,
      lifetimeSeconds: 300,
      persistAcrossProcesses: true,
      orphanReaper: true,
      sharedKey: "",
    });
    expect(p?.allowedUsers).toEqual([]);
    expect(p?.groupSessionsPerUser).toBe(true);
    expect(p?.threadSessionsPerUser).toBe(false);
  });

  it("names the key path, the value and what is expected", () => {
    const error = errorOf({
      profiles: [
        { name: "default", telegram: { token: "1:a" } },
        { name: "work", telegram: { token: "2:b" }, sandbox: { persistent: "yes" } },
      ],
    });
    expect(error.message).toContain("/etc/mediagate.yaml");
    expect(error.message).toContain(
      'profiles[1].sandbox.persistent: got "yes", expected a boolean',
    );
    expect(error.issues).toHaveLength(1);
  });

  it("names an infinite, NaN or too large number as it is, in words", async () => {
    const dir = await tempDirForTest("mg-config-");
    const shown = async (yaml: string) => {
      const file = join(dir, "numbers.yaml");
      await writeFile(file, yaml);
      const error = await loadConfig({ path: file, env }).catch((e: unknown) => e);
      return (error as ConfigError).issues.map(
        (i) => `${i.path}: got ${i.got}, expected ${i.expected}`,
      );
    };
    expect(await shown("concurrency: .inf\n")).toEqual([
      "concurrency: got Infinity, expected a finite number",
    ]);
    expect(await shown("concurrency: .nan\n")).toEqual([
      "concurrency: got NaN, expected a finite number",
    ]);
    expect(await shown("concurrency: 1e400\n")).toEqual([
      "concurrency: got Infinity, expected a finite number",
    ]);
    expect(await shown("concurrency: 99999999999999999999\n")).toEqual([
      "concurrency: got 100000000000000000000, expected a whole number <= 9007199254740991",
    ]);
  });

  it("runs sessions as their own users by default and names a bad user mode or limit", () => {
    const [defaults] = resolveConfig({}, { env }).profiles;
    expect(defaults?.sandbox).toMatchObject({ user: "per-session", sessionProcessLimit: 128 });
    const set = resolveConfig(
      { profiles: [{ name: "default", sandbox: { user: "root", sessionProcessLimit: 64 } }] },
      { env },
    );
    expect(set.profiles[0]?.sandbox).toMatchObject({ user: "root", sessionProcessLimit: 64 });
    const error = errorOf({
      profiles: [{ name: "default", sandbox: { user: "nobody", sessionProcessLimit: 2 } }],
    });
    expect(error.message).toContain(
      'profiles[0].sandbox.user: got "nobody", expected one of "per-session", "root"',
    );
    expect(error.message).toContain(
      "profiles[0].sandbox.sessionProcessLimit: got 2, expected a whole number of processes, at least 8",
    );
    const fraction = errorOf({
      profiles: [{ name: "default", sandbox: { sessionProcessLimit: 1.5 } }],
    });
    expect(fraction.message).toContain(
      "profiles[0].sandbox.sessionProcessLimit: got 1.5, expected",
    );
  });

  it("lets the shells use their FIFOs by default, takes exec and names a bad channel", () => {
    const [defaults] = resolveConfig({}, { env }).profiles;
    expect(defaults?.sandbox.shellChannel).toBe("auto");
    const exec = resolveConfig(
      { profiles: [{ name: "default", sandbox: { shellChannel: "exec" } }] },
      { env },
    );
    expect(exec.profiles[0]?.sandbox.shellChannel).toBe("exec");
    const bad = errorOf({ profiles: [{ name: "default", sandbox: { shellChannel: "fifo" } }] });
    expect(bad.message).toContain(
      'profiles[0].sandbox.shellChannel: got "fifo", expected one of "auto", "exec"',
    );
  });

  it("keeps a warm pool of one by default, takes a size and names a bad one", () => {
    const [defaults] = resolveConfig({}, { env }).profiles;
    expect(defaults?.sandbox.warmPool).toBe(1);
    const on = resolveConfig(
      { profiles: [{ name: "default", sandbox: { persistent: false, warmPool: 2 } }] },
      { env },
    );
    expect(on.profiles[0]?.sandbox.warmPool).toBe(2);
    const negative = errorOf({ profiles: [{ name: "default", sandbox: { warmPool: -1 } }] });
    expect(negative.message).toContain(
      "profiles[0].sandbox.warmPool: got -1, expected a whole number of containers, 0 to turn the warm pool off",
    );
    const huge = errorOf({ profiles: [{ name: "default", sandbox: { warmPool: 1000 } }] });
    expect(huge.message).toContain("profiles[0].sandbox.warmPool: got 1000, expected at most 32");
  });

  it("takes a tmpfs filesystem and names a bad one", () => {
    const ok = resolveConfig(
      { profiles: [{ name: "default", sandbox: { filesystem: "tmpfs" } }] },
      { env },
    );
    expect(ok.profiles[0]?.sandbox.filesystem).toBe("tmpfs");
    const error = errorOf({ profiles: [{ name: "default", sandbox: { filesystem: "disk" } }] });
    expect(error.message).toContain('profiles[0].sandbox.filesystem: got "disk", expected');
  });

  it("takes resource ceilings, 0 for no disk ceiling, and names a disk ceiling too small", () => {
    const ok = resolveConfig(
      {
        profiles: [
          {
            name: "default",
            sandbox: {
              diskLimitBytes: 0,
              memoryBytes: 1 << 28,
              tmpfsBytes: 1 << 26,
              scratchBytes: 1 << 24,
            },
          },
        ],
      },
      { env },
    );
    expect(ok.profiles[0]?.sandbox).toMatchObject({
      diskLimitBytes: 0,
      memoryBytes: 1 << 28,
      tmpfsBytes: 1 << 26,
      scratchBytes: 1 << 24,
    });
    const error = errorOf({ profiles: [{ name: "default", sandbox: { diskLimitBytes: 4096 } }] });
    expect(error.message).toContain("profiles[0].sandbox.diskLimitBytes: got 4096, expected 0");
    const scratch = errorOf({ profiles: [{ name: "default", sandbox: { scratchBytes: 4096 } }] });
    expect(scratch.message).toContain(
      "profiles[0].sandbox.scratchBytes: got 4096, expected a whole number of bytes, at least 1048576",
    );
  });

  it("refuses a volume at the sandbox's own mount points, however the path is written", () => {
    const volumes = (list: string[]) => ({
      profiles: [{ name: "default", sandbox: { volumes: list } }],
    });
    const ok = resolveConfig(volumes(["/srv/c:/tmp/cache", "/srv/d:/workspace/data:ro"]), {
      env,
    });
    expect(ok.profiles[0]?.sandbox.volumes).toEqual([
      "/srv/c:/tmp/cache",
      "/srv/d:/workspace/data:ro",
    ]);
    const refused = ["/srv/a:/tmp/", "/srv/b:/var/tmp", "/srv/c:/run/mediagate", "/srv/d:/root"];
    const error = errorOf(volumes(refused));
    refused.forEach((volume, i) => {
      expect(error.message).toContain(
        `profiles[0].sandbox.volumes[${i}]: got "${volume}", expected a volume at a container path of its own: not /workspace or /root (the slot's directories), nor /tmp, /var/tmp, /run/mediagate or below /run/mediagate (the tmpfs mounts of sandbox.scratchBytes)`,
      );
    });
  });

  it("refuses a __proto__ key as unknown instead of taking the settings under it", () => {
    const { value } = parseYaml(
      "__proto__: { concurrency: 1 }\nprofiles:\n  - name: a\n    __proto__: { busyMode: interrupt }\n",
      "/etc/mediagate.yaml",
    );
    const error = errorOf(value);
    expect(error.issues.map((i) => `${i.path}: ${i.expected}`).sort()).toEqual([
      "__proto__: no such key (unknown setting; check the spelling)",
      "profiles[0].__proto__: no such key (unknown setting; check the spelling)",
    ]);
  });

  it("reports every problem, including unknown keys and bad profile names", () => {
    const error = errorOf({
      concurrency: 0,
      profiles: [{ name: "Bad Name", sandbx: {}, agent: { kind: "gpt" } }],
    });
    const text = error.message;
    expect(text).toMatch(/concurrency: got 0, expected/);
    expect(text).toContain('profiles[0].name: got "Bad Name", expected a profile name matching');
    expect(text).toContain(
      "profiles[0].sandbx: got a mapping, expected no such key (unknown setting; did you mean sandbox?)",
    );
    expect(text).toContain('profiles[0].agent.kind: got "gpt", expected one of "shell", "openai"');
  });

  it("shows no value but a known non-secret setting's, and names the key a typo meant", () => {
    const cases: [unknown, string, string][] = [
      [
        { profiles: [{ name: "default", telegram: { tokn: "123456:AAH-tokn-secret" } }] },
        "profiles[0].telegram.tokn: got a string (not shown), expected no such key (unknown setting; did you mean token?)",
        "123456:AAH-tokn-secret",
      ],
      [
        {
          profiles: [
            {
              name: "default",
              agent: {
                kind: "openai",
                baseUrl: "http://127.0.0.1:1/v1",
                model: "m",
                api_key: "sk-underscore-secret",
              },
            },
          ],
        },
        "profiles[0].agent.api_key: got a string (not shown), expected no such key (unknown setting; did you mean apiKey?)",
        "sk-underscore-secret",
      ],
      [
        { profiles: [{ name: "default", telegram: "123456:AAH-mapping-secret" }] },
        "profiles[0].telegram: got a string (not shown), expected a mapping (a bot token goes under profiles[0].telegram.token)",
        "123456:AAH-mapping-secret",
      ],
      [
        { profiles: [{ name: "default", telegram: { name: "123456:AAH-known-elsewhere" } }] },
        "profiles[0].telegram.name: got a string (not shown), expected no such key",
        "123456:AAH-known-elsewhere",
      ],
    ];
    for (const [raw, line, secret] of cases) {
      const message = errorOf(raw).message;
      expect(message).toContain(line);
      expect(message).not.toContain(secret);
    }
  });

  it("never shows a token-shaped value, even under a key whose values are shown", () => {
    const telegram = "7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw";
    const discord = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GhIjKl.abcdefghijklmnopqrstuvwxyz0123456789AB";
    const apiKey = "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv";
    const redactor = new Redactor();
    let error: unknown;
    try {
      resolveConfig(
        {
          profiles: [
            { name: telegram },
            { name: "team", allowedUsers: [discord], agent: { kind: "shell" } },
            { name: "work", access: apiKey },
          ],
        },
        { env, source: "/etc/mediagate.yaml", redactor },
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    for (const secret of [telegram, discord, apiKey]) expect(message).not.toContain(secret);
    expect(message).toContain(
      "profiles[0].name: got a string that looks like a token (not shown), expected a profile name",
    );
    expect(message).toContain(
      "profiles[1].allowedUsers[0]: got a string that looks like a token (not shown)",
    );
    expect(message).toContain("profiles[2].access: got a string that looks like a token");
    // Whatever else prints them (a log line, the CLI's error) goes through the redactor.
    expect(redactor.text(`${telegram} ${discord} ${apiKey}`)).toBe(
      `${Redacted} ${Redacted} ${Redacted}`,
    );
  });

  it("never shows a token in an error", () => {
    const error = errorOf({
      profiles: [{ name: "default", telegram: { token: 12345678 }, extra: { token: "SECRET99" } }],
    });
    expect(error.message).not.toContain("12345678");
    expect(error.message).not.toContain("SECRET99");
    expect(error.message).toContain("profiles[0].telegram.token");
  });

  it("requires unique profile names and a channel token when there are several profiles", () => {
    const error = errorOf({
      profiles: [
        { name: "a", telegram: { token: "1:a" } },
        { name: "a", discord: { token: "x" } },
        { name: "c" },
      ],
    });
    expect(error.message).toContain('profiles[1].name: got "a", expected a unique profile name');
    expect(error.message).toContain("profiles[2]: got no telegram.token and no discord.token");
  });

  it("refuses a telegram or discord block without a token instead of falling back to the console", () => {
    expect(
      errorOf({ profiles: [{ name: "solo", telegram: { pollTimeoutSeconds: 5 } }] }).message,
    ).toBe(
      "invalid config /etc/mediagate.yaml: profiles[0].telegram.token: got nothing, expected a bot token (e.g. token: ${TELEGRAM_BOT_TOKEN} to read it from the environment), or no telegram block",
    );
    expect(
      errorOf({
        profiles: [
          { name: "a", telegram: { token: "1:a" } },
          { name: "b", telegram: { token: "2:b" }, discord: { channels: ["1"] } },
        ],
      }).message,
    ).toBe(
      "invalid config /etc/mediagate.yaml: profiles[1].discord.token: got nothing, expected a bot token (e.g. token: ${DISCORD_BOT_TOKEN} to read it from the environment), or no discord block",
    );
    // The environment's token fills the first profile's block, so that one is complete.
    const config = resolveConfig(
      { profiles: [{ name: "solo", telegram: { pollTimeoutSeconds: 5 } }] },
      { env: { ...env, telegramBotToken: "9:env-token" } },
    );
    expect(config.profiles[0]?.telegram).toEqual({
      token: "9:env-token",
      pollTimeoutSeconds: 5,
      groups: { requireMention: true },
      commands: { register: true },
    });
  });

  it("refuses two profiles with one bot token, naming both and never the token", () => {
    const telegram = errorOf({
      profiles: [
        { name: "default", telegram: { token: "123456:AAH-shared-telegram" } },
        { name: "work", discord: { token: "discord-work-token" } },
        { name: "local", telegram: { token: "123456:AAH-shared-telegram" } },
      ],
    });
    expect(telegram.message).toBe(
      'invalid config /etc/mediagate.yaml: profiles[2].telegram.token: got the bot token of profile "default" (profiles[0]), expected a bot token of its own for profile "local": one bot serves one profile (a second poller of one bot gets 409 Conflict)',
    );
    const discord = errorOf({
      profiles: [
        { name: "default", telegram: { token: "1:a" } },
        { name: "team", discord: { token: "discord-shared-token" } },
        { name: "ops", discord: { token: "discord-shared-token" } },
      ],
    });
    expect(discord.message).toBe(
      'invalid config /etc/mediagate.yaml: profiles[2].discord.token: got the bot token of profile "team" (profiles[1]), expected a bot token of its own for profile "ops": one bot serves one profile (both connections of one bot would answer every message)',
    );
    // DISCORD_BOT_TOKEN sets the first profile's token: the message says so.
    const fromEnv = errorOf(
      {
        profiles: [{ name: "default" }, { name: "team", discord: { token: "discord-env-token" } }],
      },
      { ...env, discordBotToken: "discord-env-token" },
    );
    expect(fromEnv.message).toBe(
      'invalid config /etc/mediagate.yaml: profiles[1].discord.token: got the bot token of profile "default" (profiles[0]), expected a bot token of its own for profile "team": one bot serves one profile (both connections of one bot would answer every message; DISCORD_BOT_TOKEN sets profiles[0]\'s token)',
    );
  });

  it("lets a lone profile run without tokens (console)", () => {
    const config = resolveConfig({ profiles: [{ name: "solo" }] }, { env });
    expect(config.profiles[0]?.home).toBe("/home/u/.mediagate/profiles/solo");
    expect(config.profiles[0]?.telegram).toBeUndefined();
  });

  it("refuses an API root or gateway URL from the environment that is no URL, naming the variable", () => {
    const error = errorOf(
      {},
      {
        ...env,
        telegramBotToken: "9:env",
        telegramApiRoot: "localhost:8081",
        discordBotToken: "dtok",
        discordApiRoot: "http://u:pw-in-the-url@",
        discordGatewayUrl: "gateway.local:443",
      },
    );
    expect(error.message).toBe(
      [
        "invalid config /etc/mediagate.yaml:",
        "  - TELEGRAM_API_ROOT: got a value (not shown), expected an http(s) URL, e.g. http://127.0.0.1:8081 (the environment variable sets profiles[0].telegram.apiRoot)",
        "  - DISCORD_API_ROOT: got a value (not shown), expected an http(s) URL, e.g. http://127.0.0.1:8081 (the environment variable sets profiles[0].discord.apiRoot)",
        "  - DISCORD_GATEWAY_URL: got a value (not shown), expected a ws(s) URL, e.g. ws://127.0.0.1:8080 (the environment variable sets profiles[0].discord.gatewayUrl)",
      ].join("\n"),
    );
  });

  it("env tokens override the primary (first) profile only; file home wins over MEDIAGATE_HOME", () => {
    const e: GatewayEnv = {
      ...env,
      telegramBotToken: "9:env",
      telegramApiRoot: "http://127.0.0.1:8081",
      discordBotToken: "dtok",
      mediagateHome: "/srv/env-home",
    };
    const config = resolveConfig(
      {
        home: "/var/lib/mg",
        profiles: [
          { name: "default", telegram: { token: "1:file" } },
          { name: "work", telegram: { token: "2:work" } },
        ],
      },
      { env: e },
    );
    expect(config.home).toBe("/var/lib/mg");
    expect(config.profiles[0]?.telegram).toEqual({
      token: "9:env",
      apiRoot: "http://127.0.0.1:8081",
      groups: { requireMention: true },
      commands: { register: true },
    });
    expect(config.profiles[0]?.discord?.token).toBe("dtok");
    expect(config.profiles[1]?.telegram?.token).toBe("2:work");
    expect(config.profiles[1]?.home).toBe("/var/lib/mg/profiles/work");
    expect(resolveConfig({}, { env: e }).home).toBe("/srv/env-home");
  });

  it("reads telegram.groups: requireMention (default on) and allowedChats as strings, refusing a bad id", () => {
    const config = resolveConfig(
      {
        profiles: [
          {
            name: "default",
            telegram: {
              token: "1:a",
              groups: { requireMention: false, allowedChats: [-1001234567890, "-42"] },
            },
          },
        ],
      },
      { env },
    );
    expect(config.profiles[0]?.telegram?.groups).toEqual({
      requireMention: false,
      allowedChats: ["-1001234567890", "-42"],
    });
    expect(
      errorOf({
        profiles: [
          { name: "default", telegram: { token: "1:a", groups: { allowedChats: ["team"] } } },
        ],
      }).message,
    ).toContain("a chat id: digits, negative for a group");
  });

  it("reads delivery.maxTextChunks (default 4) and refuses one below 1", () => {
    expect(resolveConfig({}, { env }).delivery.maxTextChunks).toBe(4);
    expect(resolveConfig({ delivery: { maxTextChunks: 2 } }, { env }).delivery).toMatchObject({
      maxTextChunks: 2,
      maxAttempts: 8,
    });
    expect(errorOf({ delivery: { maxTextChunks: 0 } }).message).toBe(
      "invalid config /etc/mediagate.yaml: delivery.maxTextChunks: got a number (not shown), expected a number > 0",
    );
  });

  it("reads reactions.afterMs (default 1000) and refuses one outside 0 to 60000 ms", () => {
    const profile = (reactions: Record<string, unknown>) => ({
      profiles: [{ name: "default", reactions }],
    });
    expect(resolveConfig({}, { env }).profiles[0]?.reactions.afterMs).toBe(1000);
    expect(resolveConfig(profile({ afterMs: 0 }), { env }).profiles[0]?.reactions).toMatchObject({
      enabled: true,
      afterMs: 0,
    });
    expect(errorOf(profile({ afterMs: -3 })).message).toBe(
      "invalid config /etc/mediagate.yaml: profiles[0].reactions.afterMs: got a number (not shown), expected a number >= 0",
    );
    expect(errorOf(profile({ afterMs: 90_000 })).message).toBe(
      "invalid config /etc/mediagate.yaml: profiles[0].reactions.afterMs: got a number (not shown), expected a number <= 60000",
    );
  });

  it("reads discord.allowedChannels (absent: every channel) and refuses an unquoted id", () => {
    const discord = (block: Record<string, unknown>) =>
      resolveConfig({ profiles: [{ name: "default", discord: { token: "d", ...block } }] }, { env })
        .profiles[0]?.discord;
    expect(discord({})?.allowedChannels).toBeUndefined();
    expect(discord({ allowedChannels: ["123456789012345678"] })?.allowedChannels).toEqual([
      "123456789012345678",
    ]);
    // A YAML number of 18 digits is already rounded: ids are strings.
    const bad = (id: unknown) =>
      errorOf({ profiles: [{ name: "default", discord: { token: "d", allowedChannels: [id] } }] })
        .message;
    expect(bad(123456789012345680)).toContain(
      "discord.allowedChannels[0]: got a number (not shown), expected a string",
    );
    expect(bad("#general")).toContain(
      'expected a channel id in quotes (e.g. "123456789012345678")',
    );
  });

  it("takes user ids as the platforms give them, and refuses one no message could ever carry", () => {
    const users = (ids: string[]) =>
      resolveConfig({ profiles: [{ name: "p", allowedUsers: ids, admins: ids }] }, { env })
        .profiles[0];
    const good = ["telegram:7", "telegram:-1001234", "discord:300000000000000101", "console:local"];
    expect(users(good)?.admins).toEqual(good);
    // A Telegram or Discord id is a number without a leading zero or sign: `telegram:007` is
    // never `telegram:7`, and a user name is never an id.
    for (const id of [
      "telegram:007",
      "telegram:@ada",
      "telegram:+7",
      "discord:ada",
      "discord:-3",
    ]) {
      const message = errorOf({ profiles: [{ name: "p", admins: [id] }] }).message;
      expect(message, id).toContain(`profiles[0].admins[0]: got "${id}", expected`);
      expect(message, id).toContain("telegram:123456");
    }
    expect(errorOf({ profiles: [{ name: "p", allowedUsers: ["telegram:0"] }] }).message).toContain(
      'profiles[0].allowedUsers[0]: got "telegram:0", expected',
    );
  });

  it("uses the allowlist by default, takes pairing with its limits, and names a bad mode", () => {
    const [defaults] = resolveConfig({}, { env }).profiles;
    expect(defaults?.access).toBe("allowlist");
    expect(defaults?.pairing).toEqual({
      codeTtlSeconds: 3600,
      maxPendingCodes: 10,
      maxFailedApprovals: 5,
      lockSeconds: 900,
    });
    const [set] = resolveConfig(
      { profiles: [{ name: "p", access: "pairing", pairing: { codeTtlSeconds: 600 } }] },
      { env },
    ).profiles;
    expect(set?.access).toBe("pairing");
    expect(set?.pairing).toMatchObject({ codeTtlSeconds: 600, maxFailedApprovals: 5 });
    expect(errorOf({ profiles: [{ name: "p", access: "open" }] }).message).toContain(
      'profiles[0].access: got "open", expected one of "allowlist", "pairing"',
    );
    expect(
      errorOf({ profiles: [{ name: "p", pairing: { codeTtlSeconds: 5 } }] }).message,
    ).toContain(
      "profiles[0].pairing.codeTtlSeconds: got 5, expected a whole number of seconds, at least 60",
    );
  });

  it("refuses a URL setting without an http(s) or ws(s) scheme", () => {
    // `localhost:11434/v1` is a URL to WHATWG (scheme "localhost"), and fails only at the first turn.
    const error = errorOf({
      profiles: [
        {
          name: "default",
          telegram: { token: "1:t", apiRoot: "localhost:8081" },
          discord: { token: "d", gatewayUrl: "file:///tmp/gw" },
          agent: { kind: "openai", baseUrl: "localhost:11434/v1", model: "m" },
        },
      ],
    });
    expect(error.issues.map((i) => `${i.path}: got ${i.got}, expected ${i.expected}`)).toEqual([
      "profiles[0].telegram.apiRoot: got a string (not shown), expected an http(s) or ws(s) URL",
      "profiles[0].discord.gatewayUrl: got a string (not shown), expected an http(s) or ws(s) URL",
      "profiles[0].agent.baseUrl: got a string (not shown), expected an http(s) or ws(s) URL",
    ]);
  });

  it("takes an openai agent without an API key (a local server) and with a system prompt", () => {
    const config = resolveConfig(
      {
        profiles: [
          {
            name: "default",
            agent: {
              kind: "openai",
              baseUrl: "http://127.0.0.1:11434/v1",
              model: "llama3.1",
              systemPrompt: "Answer briefly.",
            },
          },
        ],
      },
      { env },
    );
    expect(config.profiles[0]?.agent).toEqual({
      kind: "openai",
      models: [{ name: "llama3.1", baseUrl: "http://127.0.0.1:11434/v1", model: "llama3.1" }],
      defaultModel: "llama3.1",
      fallback: [],
      systemPrompt: "Answer briefly.",
      maxToolRounds: 8,
    });
    const empty = errorOf({
      profiles: [
        {
          name: "default",
          agent: { kind: "openai", baseUrl: "http://h/v1", model: "m", apiKey: "" },
        },
      ],
    });
    expect(empty.message).toBe(
      "invalid config /etc/mediagate.yaml: profiles[0].agent.apiKey: got a string (not shown), expected a non-empty API key (leave apiKey out for a server that needs none)",
    );
  });

  it("trims the shared key and fills the openai tool-round default", () => {
    const config = resolveConfig(
      {
        profiles: [
          {
            name: "default",
            agent: { kind: "openai", baseUrl: "http://127.0.0.1:1/v1", apiKey: "k", model: "m" },
            sandbox: { sharedKey: "  team  " },
          },
        ],
      },
      { env },
    );
    expect(config.profiles[0]?.sandbox.sharedKey).toBe("team");
    expect(config.profiles[0]?.agent).toMatchObject({ kind: "openai", maxToolRounds: 8 });
  });

  it("refuses two listeners on one host:port, naming both keys", () => {
    const webhook = (listen?: string) => ({
      url: "https://bot.example.org/tg",
      secretToken: "s3cret-token",
      ...(listen === undefined ? {} : { listen }),
    });
    const error = errorOf({
      health: { listen: "127.0.0.1:8787" },
      web: {},
      profiles: [
        { name: "a", telegram: { token: "1:a", webhook: webhook() } },
        { name: "b", telegram: { token: "2:b", webhook: webhook() } },
        { name: "c", telegram: { token: "3:c", webhook: webhook("0.0.0.0:9464") } },
        { name: "d", telegram: { token: "4:d", webhook: webhook("127.0.0.1:0") } },
      ],
    });
    expect(error.issues.map((i) => `${i.path}: got ${i.got}, expected ${i.expected}`)).toEqual([
      'web.listen: got "127.0.0.1:8787", the address of health.listen, expected a host:port of its own (two listeners cannot share one)',
      'profiles[1].telegram.webhook.listen: got "127.0.0.1:8443", the address of profiles[0].telegram.webhook.listen, expected a host:port of its own (two listeners cannot share one)',
    ]);
    // Another port, another address family, or port 0 (a free one each) is fine.
    expect(() =>
      resolveConfig(
        {
          health: { listen: "127.0.0.1:9464" },
          web: { listen: "[::1]:9464" },
          profiles: [
            { name: "a", telegram: { token: "1:a", webhook: webhook("127.0.0.1:0") } },
            { name: "b", telegram: { token: "2:b", webhook: webhook("127.0.0.1:0") } },
          ],
        },
        { env },
      ),
    ).not.toThrow();
  });

  it("reads health.listen and web.listen as host:port, IPv6 in brackets, health on loopback only", () => {
    const config = resolveConfig(
      { health: { listen: "[::1]:9464" }, web: { listen: "[::]:8787", allowedHosts: [] } },
      { env },
    );
    expect(config.healthListen).toBe("[::1]:9464");
    expect(config.web).toEqual({ listen: "[::]:8787", allowedHosts: [] });
    expect(resolveConfig({ health: { listen: "localhost:0" } }, { env }).healthListen).toBe(
      "localhost:0",
    );
    const refused: [object, string][] = [
      [
        { health: { listen: "0.0.0.0:9464" } },
        'health.listen: got "0.0.0.0:9464", expected a loopback "host:port", e.g. "127.0.0.1:9464" or "[::1]:9464"',
      ],
      [
        { health: { listen: "::1:9464" } },
        'health.listen: got "::1:9464", expected an IPv6 address in brackets, e.g. "[::1]:8787"',
      ],
      [
        { web: { listen: "127.0.0.1:70000" } },
        'web.listen: got "127.0.0.1:70000", expected a port from 0 to 65535 after the last ":"',
      ],
      [
        { web: { listen: "8787" } },
        'web.listen: got "8787", expected a "host:port", e.g. "127.0.0.1:8787" or "[::1]:8787"',
      ],
      ...["a..b", "[1.2.3.4]", "999.1.1.1", "gate.example:8787"].map((name): [object, string] => [
        { web: { listen: "0.0.0.0:8787", allowedHosts: ["gate.example", "[fd00::20]", name] } },
        `web.allowedHosts[2]: got ${JSON.stringify(name)}, expected a host name without port`,
      ]),
    ];
    for (const [raw, message] of refused) expect(errorOf(raw).message).toContain(message);
  });
});

describe("${VAR} references", () => {
  const withVariables = (variables: Record<string, string>): GatewayEnv => ({ ...env, variables });

  it("fills secrets and URLs from the environment and teaches the redactor the secrets", () => {
    const redactor = new Redactor();
    const config = resolveConfig(
      {
        profiles: [
          {
            name: "default",
            telegram: { token: "${WORK_BOT_TOKEN}", apiRoot: "${BOT_API:-http://127.0.0.1:8081}" },
            agent: {
              kind: "openai",
              baseUrl: "http://127.0.0.1:1/v1",
              apiKey: "${MODEL_KEY}",
              model: "m",
              systemPrompt: "Costs $${PRICE}, never ${MODEL_KEY_NAME:-the key}.",
            },
          },
        ],
      },
      {
        env: withVariables({
          WORK_BOT_TOKEN: "777:AAH-from-the-env",
          MODEL_KEY: "sk-from-the-env",
        }),
        redactor,
      },
    );
    const [p] = config.profiles;
    expect(p?.telegram).toEqual({
      token: "777:AAH-from-the-env",
      apiRoot: "http://127.0.0.1:8081",
      groups: { requireMention: true },
      commands: { register: true },
    });
    expect(p?.agent).toMatchObject({
      models: [expect.objectContaining({ apiKey: "sk-from-the-env" })],
      systemPrompt: "Costs ${PRICE}, never the key.",
    });
    expect(redactor.text("token 777:AAH-from-the-env key sk-from-the-env")).toBe(
      `token ${Redacted} key ${Redacted}`,
    );
  });

  it("names the key path and the variable when a variable is unset, and shows no secret", () => {
    const redactor = new Redactor();
    let error: unknown;
    try {
      resolveConfig(
        {
          profiles: [
            { name: "default", telegram: { token: "${TELEGRAM_BOT_TOKEN}" } },
            { name: "team", discord: { token: "${TEAM_DISCORD_BOT_TOKEN}" } },
            { name: "work", telegram: { token: "inline-secret-token" } },
          ],
        },
        { env: withVariables({ TEAM_DISCORD_BOT_TOKEN: "" }), source: "/etc/m.yaml", redactor },
      );
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toBe(
      [
        "invalid config /etc/m.yaml:",
        "  - profiles[0].telegram.token: got ${TELEGRAM_BOT_TOKEN}, expected the environment variable TELEGRAM_BOT_TOKEN to be set (it is unset or empty)",
        "  - profiles[1].discord.token: got ${TEAM_DISCORD_BOT_TOKEN}, expected the environment variable TEAM_DISCORD_BOT_TOKEN to be set (it is unset or empty)",
      ].join("\n"),
    );
    // The reference is not a secret (the printed message keeps it); the inline token is.
    expect(redactor.text(message)).toBe(message);
    expect(redactor.text("inline-secret-token")).toBe(Redacted);
  });

  it("trims a variable's value as the override variables are, and counts blank as unset", () => {
    // `export TOKEN=$(cat /run/secrets/token)` keeps no newline, but `--env-file` and
    // systemd's EnvironmentFile= can; a token with one is refused by Telegram as 404.
    const config = resolveConfig(
      {
        profiles: [
          {
            name: "default",
            telegram: { token: "${BOT_TOKEN}", apiRoot: "${BOT_API:-http://127.0.0.1:8081}" },
          },
        ],
      },
      { env: withVariables({ BOT_TOKEN: "777:AAH-from-a-file\n", BOT_API: " \n" }) },
    );
    expect(config.profiles[0]?.telegram).toMatchObject({
      token: "777:AAH-from-a-file",
      apiRoot: "http://127.0.0.1:8081",
    });
    expect(errorOf({ home: "${BLANK}" }, withVariables({ BLANK: "\t\n" })).message).toContain(
      "home: got ${BLANK}, expected the environment variable BLANK to be set (it is unset or empty)",
    );
  });

  it("reads the variables from the process environment map", () => {
    const e = readEnv({ HOME: "/home/x", TEAM_TOKEN: "team-token-1" });
    const config = resolveConfig(
      { profiles: [{ name: "team", discord: { token: "${TEAM_TOKEN}" } }] },
      { env: e },
    );
    expect(config.profiles[0]?.discord?.token).toBe("team-token-1");
  });
});

describe("durations that become timers", () => {
  // 30 days: past the 2^31 - 1 ms a Node.js timer waits, so setTimeout would fire after 1 ms.
  const month = 30 * 24 * 3600;
  const openai = (extra: Record<string, unknown>) => ({
    kind: "openai",
    models: [{ name: "main", baseUrl: "http://127.0.0.1:1/v1", model: "m", ...extra }],
  });
  const cases: readonly [string, (seconds: number) => unknown][] = [
    ["drainTimeoutSeconds", (s) => ({ drainTimeoutSeconds: s })],
    [
      "profiles[0].sandbox.lifetimeSeconds",
      (s) => ({ profiles: [{ name: "a", sandbox: { lifetimeSeconds: s } }] }),
    ],
    [
      "profiles[0].stillWorkingAfterSeconds",
      (s) => ({ profiles: [{ name: "a", stillWorkingAfterSeconds: s }] }),
    ],
    [
      "profiles[0].progress.afterSeconds",
      (s) => ({ profiles: [{ name: "a", progress: { afterSeconds: s } }] }),
    ],
    [
      "profiles[0].progress.everySeconds",
      (s) => ({ profiles: [{ name: "a", progress: { everySeconds: s } }] }),
    ],
    [
      "profiles[0].telegram.pollTimeoutSeconds",
      (s) => ({ profiles: [{ name: "a", telegram: { token: "1:t", pollTimeoutSeconds: s } }] }),
    ],
    [
      "profiles[0].agent.models[0].timeoutSeconds",
      (s) => ({ profiles: [{ name: "a", agent: openai({ timeoutSeconds: s }) }] }),
    ],
    [
      "profiles[0].agent.approvals.expiresSeconds",
      (s) => ({
        profiles: [
          { name: "a", agent: { kind: "shell", approvals: { ask: "always", expiresSeconds: s } } },
        ],
      }),
    ],
    [
      "profiles[0].schedules.runTimeoutSeconds",
      (s) => ({ profiles: [{ name: "a", schedules: { runTimeoutSeconds: s } }] }),
    ],
    [
      "store.queryTimeoutMs",
      (s) => ({ store: { kind: "postgres", url: "postgres://h/d", queryTimeoutMs: s * 1000 } }),
    ],
    [
      "store.connectTimeoutMs",
      (s) => ({ store: { kind: "postgres", url: "postgres://h/d", connectTimeoutMs: s * 1000 } }),
    ],
    [
      "store.idleTimeoutMs",
      (s) => ({ store: { kind: "postgres", url: "postgres://h/d", idleTimeoutMs: s * 1000 } }),
    ],
    [
      "store.statementTimeoutMs",
      (s) => ({ store: { kind: "postgres", url: "postgres://h/d", statementTimeoutMs: s * 1000 } }),
    ],
  ];

  it.each(cases)("refuses %s past the longest timer, naming the bound", (path, raw) => {
    const error = errorOf(raw(month));
    expect(error.issues.map((i) => i.path)).toEqual([path]);
    expect(error.issues[0]?.expected).toMatch(
      /^at most 2147483(647 ms|\d* seconds) \(about 24\.8 days/,
    );
  });

  it.each(cases)("takes %s at the longest timer", (_path, raw) => {
    expect(() => resolveConfig(raw(2_147_483), { env })).not.toThrow();
  });
});

describe("loadConfig", () => {
  it("reads YAML from the file, and reports syntax errors and missing files with the path", async () => {
    const dir = await tempDirForTest("mg-config-");
    const good = join(dir, "mediagate.yaml");
    await writeFile(good, "home: ./state\nconcurrency: 2\nprofiles:\n  - name: default\n");
    const config = await loadConfig({ path: good, env });
    expect(config.home).toBe(join(dir, "state"));
    expect(config.concurrency).toBe(2);
    const bad = join(dir, "bad.yaml");
    await writeFile(bad, "profiles: [\n");
    await expect(loadConfig({ path: bad, env })).rejects.toThrow(bad);
    await expect(loadConfig({ path: join(dir, "none.yaml"), env })).rejects.toThrow(
      /none\.yaml: got a missing file/,
    );
  });

  it("refuses a file that is not UTF-8, naming its first such line and quoting nothing", async () => {
    const dir = await tempDirForTest("mg-config-");
    const file = join(dir, "latin1.yaml");
    // Saved as Latin-1: "ü" is the lone byte 0xfc, which UTF-8 decoding turned into U+FFFD.
    await writeFile(
      file,
      Buffer.concat([
        Buffer.from("concurrency: 2\nhome: /srv/b"),
        Buffer.from([0xfc]),
        Buffer.from("cher\nprofiles:\n  - name: default\n"),
      ]),
    );
    const error = await loadConfig({ path: file, env }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      `invalid config ${file}:2:1: got text that is not UTF-8, expected a UTF-8 file (convert it, e.g. iconv -f latin1 -t utf-8)`,
    );
  });

  it("refuses a YAML tag it does not resolve instead of loading the text after it", async () => {
    const dir = await tempDirForTest("mg-config-");
    const file = join(dir, "tagged.yaml");
    // Home Assistant's `!secret name` reads a secrets file; YAML alone loads the bare name as
    // the token, and the bot fails with 401 far from the line that caused it.
    await writeFile(
      file,
      "profiles:\n  - name: default\n    telegram:\n      token: !secret work_bot_token\n",
    );
    const error = await loadConfig({ path: file, env }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toBe(
      `invalid config ${file}:4:14: got the YAML tag !secret, expected no tag: mediagate resolves none (write \${NAME} to read a secret from the environment variable NAME)`,
    );
  });

  it("names file:line:column of a YAML syntax error, without quoting the source", async () => {
    const dir = await tempDirForTest("mg-config-");
    const file = join(dir, "broken.yaml");
    await writeFile(
      file,
      'profiles:\n  - name: default\n    telegram: { token: "123:AAH-unclosed-secret"\n  - name: work\n',
    );
    const one = await loadConfig({ path: file, env }).catch((e: unknown) => e);
    expect(one).toBeInstanceOf(ConfigError);
    expect((one as Error).message).toBe(
      `invalid config ${file}:4:3: got invalid YAML, expected valid YAML (bad indent)`,
    );
    expect((one as Error).message).not.toContain("AAH-unclosed-secret");
    const two = join(dir, "two.yaml");
    await writeFile(two, "a: 1\n\tb: 2\nc: [\n");
    const both = await loadConfig({ path: two, env }).catch((e: unknown) => e);
    expect((both as Error).message).toBe(
      [
        `invalid config ${two}:`,
        `  - ${two}:2:1: got invalid YAML, expected valid YAML (tab as indent)`,
        `  - ${two}:4:1: got invalid YAML, expected valid YAML (bad indent)`,
      ].join("\n"),
    );
  });

  it("names file:line:column of each schema problem, at the key that holds it, in file order", async () => {
    const dir = await tempDirForTest("mg-config-");
    const file = join(dir, "mediagate.yaml");
    await writeFile(
      file,
      [
        "concurrency: lots",
        "profiles:",
        "  - name: default",
        "    telegram:",
        '      tokn: "123:AAH-mistyped-key-secret"',
        '    sandbox: { persistent: "yes", filesystem: zfs }',
        "    busyMode: sometimes",
        "  - discord: { token: x }",
        "",
      ].join("\n"),
    );
    const error = await loadConfig({ path: file, env }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).message).toBe(
      [
        `invalid config ${file}:`,
        `  - ${file}:1:1: concurrency: got "lots", expected a number`,
        `  - ${file}:5:7: profiles[0].telegram.tokn: got a string (not shown), expected no such key (unknown setting; did you mean token?)`,
        `  - ${file}:6:16: profiles[0].sandbox.persistent: got "yes", expected a boolean (true or false)`,
        `  - ${file}:6:35: profiles[0].sandbox.filesystem: got "zfs", expected one of "bind", "tmpfs"`,
        `  - ${file}:7:5: profiles[0].busyMode: got "sometimes", expected one of "queue", "interrupt", "collect"`,
        // A key the file lacks is placed at the closest entry above it: here the list item.
        `  - ${file}:8:5: profiles[1].name: got nothing, expected a string`,
      ].join("\n"),
    );
    expect((error as ConfigError).issues.map((i) => i.at)).toEqual([
      { line: 1, column: 1 },
      { line: 5, column: 7 },
      { line: 6, column: 16 },
      { line: 6, column: 35 },
      { line: 7, column: 5 },
      { line: 8, column: 5 },
    ]);
    expect((error as ConfigError).message).not.toContain("AAH-mistyped-key-secret");
  });

  it("places a problem with a ${VAR} at the key that names the variable", async () => {
    const dir = await tempDirForTest("mg-config-");
    const file = join(dir, "mediagate.yaml");
    await writeFile(
      file,
      [
        "web:",
        "  listen: ${WEB_LISTEN}",
        "profiles:",
        "  - name: default",
        "    telegram:",
        "      token: ${MISSING_BOT_TOKEN}",
        "",
      ].join("\n"),
    );
    const listening: GatewayEnv = { ...env, variables: { WEB_LISTEN: "127.0.0.1:0" } };
    const unset = await loadConfig({ path: file, env: listening }).catch((e: unknown) => e);
    expect((unset as Error).message).toBe(
      `invalid config ${file}:6:7: profiles[0].telegram.token: got \${MISSING_BOT_TOKEN}, expected the environment variable MISSING_BOT_TOKEN to be set (it is unset or empty)`,
    );
    const e: GatewayEnv = {
      ...env,
      variables: { WEB_LISTEN: "nowhere", MISSING_BOT_TOKEN: "1:a" },
    };
    const wrong = await loadConfig({ path: file, env: e }).catch((x: unknown) => x);
    expect((wrong as Error).message).toBe(
      `invalid config ${file}:2:3: web.listen: got "nowhere", expected a "host:port", e.g. "127.0.0.1:8787" or "[::1]:8787"`,
    );
  });

  it("places the checks across profiles too, and follows aliases to their anchor", async () => {
    const dir = await tempDirForTest("mg-config-");
    const file = join(dir, "mediagate.yaml");
    await writeFile(
      file,
      [
        "profiles:",
        "  - name: default",
        "    telegram: &bot { token: 1:shared }",
        "  - name: default",
        "    telegram: *bot",
        "",
      ].join("\n"),
    );
    const error = await loadConfig({ path: file, env }).catch((e: unknown) => e);
    // In the order of the file: the shared token is written at the anchor, line 3.
    expect((error as ConfigError).issues.map((i) => [i.path, i.at])).toEqual([
      ["profiles[1].telegram.token", { line: 3, column: 22 }],
      ["profiles[1].name", { line: 4, column: 5 }],
    ]);
  });

  it("takes the path from MEDIAGATE_CONFIG when none is given", async () => {
    const dir = await tempDirForTest("mg-config-");
    const file = join(dir, "m.yaml");
    await writeFile(file, "concurrency: 3\n");
    const e = readEnv({ MEDIAGATE_CONFIG: file, HOME: "/home/x" });
    expect((await loadConfig({ env: e })).concurrency).toBe(3);
  });
});
