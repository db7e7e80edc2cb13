import { describe, expect, it } from "vitest";
import { emptyEnv } from "./env.js";
import { resolveConfig } from "./load.js";
import { isShownPath, secretsOfConfig, secretsOfEnv, secretsOfRawConfig } from "./secrets.js";

describe("which config values are secret", () => {
  it.each([
    [["concurrency"], true],
    [["profiles", 0, "name"], true],
    [["profiles", 0, "allowedUsers", 3], true],
    [["profiles", 0, "sandbox", "image"], true],
    [["profiles", 0, "agent", "model"], true],
    [["profiles", 0, "telegram", "token"], false],
    [["profiles", 0, "agent", "apiKey"], false],
    [["profiles", 0, "telegram", "apiRoot"], false],
    [["profiles", 0, "telegram", "tokn"], false],
    [["profiles", 0, "telegram", "name"], false],
    [["profiles", 0, "telegram"], false],
    [["profiles", 0, "constructor"], false],
    [[], false],
  ] as [PropertyKey[], boolean][])("%j shown: %s", (path, shown) => {
    expect(isShownPath(path)).toBe(shown);
  });

  it("collects every value but those of known non-secret settings, under any key", () => {
    const secrets = secretsOfRawConfig({
      home: "/var/lib/mg",
      concurrency: 4,
      extra: { deep: ["hidden-in-a-list"] },
      profiles: [
        {
          name: "default",
          telegram: { tokn: "123:typo-token", apiRoot: "http://u:url-pass@h/x?key=query-secret" },
          agent: { kind: "openai", apikey: 12345678, model: "gpt" },
          sandbox: { image: "mediagate-sandbox:local" },
        },
        { name: "work", telegram: "456:where-a-mapping-belongs" },
      ],
    });
    expect(secrets).toEqual(
      expect.arrayContaining([
        "hidden-in-a-list",
        "123:typo-token",
        "url-pass",
        "query-secret",
        "12345678",
        "456:where-a-mapping-belongs",
      ]),
    );
    for (const plain of [
      "/var/lib/mg",
      "default",
      "work",
      "openai",
      "gpt",
      "mediagate-sandbox:local",
    ]) {
      expect(secrets).not.toContain(plain);
    }
  });

  it("knows the resolved tokens and keys, env overrides included", () => {
    const env = {
      ...emptyEnv("/home/u"),
      telegramBotToken: "9:env-token",
      discordBotToken: "d-env-token",
    };
    const config = resolveConfig(
      {
        profiles: [
          {
            name: "default",
            agent: {
              kind: "openai",
              baseUrl: "http://127.0.0.1:1/v1",
              apiKey: "sk-file-key",
              model: "m",
            },
          },
        ],
      },
      { env },
    );
    expect(secretsOfConfig(config)).toEqual(
      expect.arrayContaining(["9:env-token", "d-env-token", "sk-file-key"]),
    );
    expect(secretsOfEnv(env)).toEqual(["9:env-token", "d-env-token"]);
  });
});
