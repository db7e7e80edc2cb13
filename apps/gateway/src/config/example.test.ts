import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readEnv } from "./env.js";
import { ConfigError } from "./errors.js";
import { loadConfig, parseYaml, resolveConfig } from "./load.js";
import { knownKeysAt } from "./secrets.js";

const repoFile = (name: string) => fileURLToPath(new URL(`../../../../${name}`, import.meta.url));
const ExampleFile = repoFile("mediagate.example.yaml");
const ConfigDoc = repoFile("docs/configuration.md");

/** The variables the example needs (its references without a default), as an operator sets them. */
const Tokens = {
  TELEGRAM_BOT_TOKEN: "111111:AAH-example-default",
  TEAM_DISCORD_BOT_TOKEN: "example-team-discord-token",
  LOCAL_TELEGRAM_BOT_TOKEN: "222222:AAH-example-local",
};

describe("mediagate.example.yaml", () => {
  it("validates as shipped, with only its bot tokens in the environment", async () => {
    const config = await loadConfig({
      path: ExampleFile,
      env: readEnv({ HOME: "/home/operator", ...Tokens }),
    });
    expect(config.home).toBe("/home/operator/.mediagate");
    const [tg, dc, local] = config.profiles;
    expect(config.profiles.map((p) => p.name)).toEqual(["default", "team", "local"]);
    expect(tg?.telegram?.token).toBe(Tokens.TELEGRAM_BOT_TOKEN);
    expect(tg?.discord).toBeUndefined();
    expect(dc?.discord).toMatchObject({
      token: Tokens.TEAM_DISCORD_BOT_TOKEN,
      apiRoot: "https://discord.com/api",
    });
    expect(dc?.telegram).toBeUndefined();
    expect(local?.telegram).toMatchObject({
      token: Tokens.LOCAL_TELEGRAM_BOT_TOKEN,
      apiRoot: "https://api.telegram.org",
    });
    expect(local?.agent).toEqual({
      kind: "openai",
      models: [{ name: "llama3.1", baseUrl: "http://127.0.0.1:11434/v1", model: "llama3.1" }],
      defaultModel: "llama3.1",
      fallback: [],
      systemPrompt: "Answer briefly. Put what you make under /workspace.",
      maxToolRounds: 8,
    });
    for (const p of config.profiles) {
      expect(p.sandbox.image).toBe("mediagate-sandbox:local");
      expect(p.allowedUsers.length).toBeGreaterThan(0);
    }
  });

  it("needs exactly its three bot tokens; without them the error names each key and variable", async () => {
    const text = await readFile(ExampleFile, "utf8");
    const uncommented = text
      .split("\n")
      .map((line) => line.replace(/(^|\s)#.*$/, ""))
      .join("\n");
    const required = [...uncommented.matchAll(/\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g)].map((m) => m[1]);
    expect(required.sort()).toEqual(Object.keys(Tokens).sort());

    const error = await loadConfig({ path: ExampleFile, env: readEnv({ HOME: "/h" }) }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).issues.map((i) => `${i.path} ${i.got}`)).toEqual([
      "profiles[0].telegram.token ${TELEGRAM_BOT_TOKEN}",
      "profiles[1].discord.token ${TEAM_DISCORD_BOT_TOKEN}",
      "profiles[2].telegram.token ${LOCAL_TELEGRAM_BOT_TOKEN}",
    ]);
  });

  it("shows delivery's defaults in its commented line: uncommented, it changes nothing", async () => {
    const text = await readFile(ExampleFile, "utf8");
    const line = /^# (delivery: .*)$/m.exec(text)?.[1];
    expect(line).toContain("maxTextChunks: 4");
    const env = readEnv({ HOME: "/h" });
    const shown = resolveConfig(parseYaml(line ?? "", "example").value, { env });
    expect(shown.delivery).toEqual(resolveConfig({}, { env }).delivery);
  });
});

describe("README.md", () => {
  it("shows a config snippet that validates", async () => {
    const readme = await readFile(repoFile("README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Configuration"));
    const snippet = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
    expect(snippet).toBeDefined();
    const env = readEnv({ HOME: "/h", TELEGRAM_BOT_TOKEN: "1:AAH-readme" });
    const config = resolveConfig(parseYaml(snippet ?? "", "README.md").value, { env });
    expect(config.profiles[0]?.telegram?.token).toBe("1:AAH-readme");
  });
});

describe("docs/configuration.md", () => {
  /** Every key the schema knows, as `parent.key` paths without list indexes. */
  function schemaKeys(path: PropertyKey[] = [], out: string[] = []): string[] {
    for (const key of knownKeysAt(path)) {
      const name = [...path, key].filter((p) => typeof p === "string").join(".");
      out.push(name);
      schemaKeys([...path, key], out);
      schemaKeys([...path, key, 0], out);
    }
    return out;
  }

  it("documents every config key", async () => {
    const doc = await readFile(ConfigDoc, "utf8");
    const keys = [...new Set(schemaKeys())];
    expect(keys).toContain("profiles.agent.systemPrompt");
    // A key counts as documented when it appears in backticks, alone or in a dotted path
    // (`telegram`, `media.allowDirs`, `delivery.maxAttempts`).
    const named = new Set([...doc.matchAll(/`([A-Za-z.]+)`/g)].flatMap((m) => m[1]?.split(".")));
    const missing = keys.filter((key) => !named.has(key.split(".").at(-1)));
    expect(missing).toEqual([]);
  });
});
