import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./harness/cli.js";
import { createTempHome, TestImage } from "./harness/gateway-home.js";

/**
 * Case 9 of the sandbox-boundary issue, through the real CLI: a secret given under a mistyped
 * key, where a mapping belongs, or in a document the YAML parser rejects never appears in what
 * `start` and `doctor` print, while the message still names the key and what was expected.
 */
interface SecretCase {
  readonly name: string;
  readonly yaml: string;
  /** Written as is; otherwise a `home:` line (inside the test's temp dir) comes first. */
  readonly whole?: boolean;
  readonly secret: string;
  /** Each must appear in the output of both commands. */
  readonly says: readonly string[];
}

const cases: readonly SecretCase[] = [
  {
    name: "a mistyped token key (tokn:)",
    yaml: 'profiles:\n  - name: default\n    telegram:\n      tokn: "123456789:AAH-tokn-secret-value"\n',
    secret: "123456789:AAH-tokn-secret-value",
    says: ["profiles[0].telegram.tokn: got a string (not shown)", "did you mean token?"],
  },
  {
    name: "an API key under api_key:",
    yaml: "profiles:\n  - name: default\n    agent:\n      kind: openai\n      baseUrl: http://127.0.0.1:1/v1\n      model: m\n      api_key: sk-underscore-secret-value\n",
    secret: "sk-underscore-secret-value",
    says: ["profiles[0].agent.api_key: got a string (not shown)", "did you mean apiKey?"],
  },
  {
    name: "an API key under apikey:",
    yaml: "profiles:\n  - name: default\n    agent: { kind: openai, baseUrl: 'http://127.0.0.1:1/v1', model: m, apikey: sk-lowercase-secret-value }\n",
    secret: "sk-lowercase-secret-value",
    says: ["profiles[0].agent.apikey: got a string (not shown)", "did you mean apiKey?"],
  },
  {
    name: "a token given where the telegram mapping belongs",
    yaml: 'profiles:\n  - name: default\n    telegram: "123456789:AAH-mapping-secret-value"\n',
    secret: "123456789:AAH-mapping-secret-value",
    says: [
      "profiles[0].telegram: got a string (not shown), expected a mapping",
      "a bot token goes under profiles[0].telegram.token",
    ],
  },
  {
    name: "a document the YAML parser rejects, quoting the token back",
    yaml: "- name: default\ntoken: 123456789:AAH-yaml-scalar-secret\n",
    whole: true,
    secret: "AAH-yaml-scalar-secret",
    says: ["got invalid YAML, expected valid YAML (unexpected token)"],
  },
];

describe("no secret in start-up errors or doctor output, whatever key it was given under", () => {
  let home = "";
  beforeAll(async () => {
    home = await createTempHome("cli-secrets");
  });
  afterAll(async () => {
    if (home !== "") await rm(home, { recursive: true, force: true });
  });

  for (const c of cases) {
    it(`start and doctor: ${c.name}`, async () => {
      const file = join(home, `${c.secret.slice(-12)}.yaml`);
      await writeFile(file, c.whole === true ? c.yaml : `home: ${join(home, "h")}\n${c.yaml}`);
      for (const command of ["start", "doctor"]) {
        const run = await runCli([command, "--config", file], { home });
        expect(run.code, `${command}: ${run.output}`).not.toBe(0);
        expect(run.output).not.toContain(c.secret);
        for (const line of c.says) expect(run.output, command).toContain(line);
      }
    });
  }

  it("start: a token and a URL password stay out of every line when the Bot API is unreachable", async () => {
    const token = "123456789:AAH-unreachable-secret";
    const password = "url-password-secret";
    const file = join(home, "unreachable.yaml");
    await writeFile(
      file,
      [
        `home: ${join(home, "unreachable-home")}`,
        "profiles:",
        "  - name: default",
        `    telegram: { token: "${token}", apiRoot: "http://bot:${password}@127.0.0.1:9" }`,
        '    allowedUsers: ["telegram:1"]',
        `    sandbox: { image: ${TestImage} }`,
        "",
      ].join("\n"),
    );
    const run = await runCli(["start", "--config", file], {
      home,
      env: { LOG_LEVEL: "debug" },
    });
    expect(run.code, run.output).not.toBe(0);
    expect(run.output).toContain("mediagate:");
    expect(run.output).not.toContain(token);
    expect(run.output).not.toContain("AAH-unreachable-secret");
    expect(run.output).not.toContain(password);
  });

  it("start: a token from TELEGRAM_BOT_TOKEN stays out of a config error", async () => {
    const token = "987654321:AAH-env-secret-value";
    const file = join(home, "env.yaml");
    await writeFile(
      file,
      `profiles:\n  - name: default\n    telegram: { uploadMaxBytes: "${token}" }\n`,
    );
    const run = await runCli(["start", "--config", file], {
      home,
      env: { TELEGRAM_BOT_TOKEN: token },
    });
    expect(run.code).not.toBe(0);
    expect(run.output).toContain("profiles[0].telegram.uploadMaxBytes");
    expect(run.output).not.toContain(token);
  });
});
