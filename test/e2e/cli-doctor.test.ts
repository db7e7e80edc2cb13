import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { closedPort } from "../../test-support/net.js";
import { FakeDiscord } from "../fakes/discord/index.js";
import { FakeOpenAIServer } from "../fakes/openai/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { runCli } from "./harness/cli.js";
import { createTempHome, TestImage } from "./harness/gateway-home.js";

/** Tokens the fakes do not accept (they answer 401), shaped like real ones. */
const WrongTelegramToken = "987654321:AAH-doctor-wrong-telegram-token";
const WrongDiscordToken = "MTIzNDU2Nzg5.doctor-wrong-discord-token.abcdefgh";
const ApiKey = "sk-doctor-api-key-secret";

/**
 * `mediagate doctor` through the real CLI against the protocol fakes: each bot token is
 * probed (`getMe`, Discord `/users/@me`), the agent endpoint (`/models`), each failure
 * printed with what to do, the exit code 1 when anything failed, and no token or key printed.
 */
describe("mediagate doctor probes tokens and the agent endpoint", () => {
  let dir = "";
  let telegram: FakeTelegram;
  let discord: FakeDiscord;
  let openai: FakeOpenAIServer;

  beforeAll(async () => {
    dir = await createTempHome("cli-doctor");
    telegram = new FakeTelegram();
    await telegram.start();
    discord = await FakeDiscord.start();
    openai = await FakeOpenAIServer.start({ apiKey: ApiKey, models: ["qwen2.5:latest", "llama3"] });
  });
  afterAll(async () => {
    await telegram?.stop();
    await discord?.close();
    await openai?.close();
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  async function doctor(profile: {
    telegramToken: string;
    discordToken: string;
    baseUrl: string;
    apiKey?: string;
    model?: string;
  }) {
    const file = join(dir, `${Math.random().toString(16).slice(2)}.yaml`);
    await writeFile(
      file,
      [
        `home: ${join(dir, "home")}`,
        "profiles:",
        "  - name: default",
        `    telegram: { token: "${profile.telegramToken}", apiRoot: "${telegram.apiRoot}" }`,
        `    discord: { token: "${profile.discordToken}", apiRoot: "${discord.apiRoot}", gatewayUrl: "${discord.gatewayUrl}" }`,
        '    allowedUsers: ["telegram:1"]',
        `    agent: { kind: openai, baseUrl: "${profile.baseUrl}", apiKey: "${profile.apiKey ?? ApiKey}", model: "${profile.model ?? "qwen2.5"}" }`,
        `    sandbox: { image: ${TestImage} }`,
        "",
      ].join("\n"),
    );
    const run = await runCli(["doctor", "--config", file], { home: dir });
    return { ...run, lines: run.stdout.split("\n").filter((l) => l !== "") };
  }

  it("fails on refused tokens and an unreachable model server, saying what to do, printing no secret", async () => {
    const port = await closedPort();
    const run = await doctor({
      telegramToken: WrongTelegramToken,
      discordToken: WrongDiscordToken,
      baseUrl: `http://127.0.0.1:${port}/v1`,
    });
    expect(run.code, run.output).toBe(1);
    const at = (prefix: string) => run.lines.findIndex((l) => l.startsWith(prefix));

    const tg = at("✖ telegram (default): ");
    expect(run.lines[tg]).toBe(
      `✖ telegram (default): token refused by ${telegram.apiRoot} (401 Unauthorized)`,
    );
    expect(run.lines[tg + 1]).toMatch(/^ {2}fix: set telegram\.token .*@BotFather/);

    const dc = at("✖ discord (default): ");
    expect(run.lines[dc]).toBe(
      `✖ discord (default): token refused by ${discord.apiRoot} (401 Unauthorized)`,
    );
    expect(run.lines[dc + 1]).toMatch(/^ {2}fix: set discord\.token .*developer portal/);

    const agent = at("✖ agent (default): ");
    expect(run.lines[agent]).toBe(
      `✖ agent (default): nothing answers at http://127.0.0.1:${port}/v1 (connect ECONNREFUSED 127.0.0.1:${port})`,
    );
    expect(run.lines[agent + 1]).toMatch(/^ {2}fix: start the model server .*agent\.baseUrl/);

    // Docker and the image are fine: only the three probes failed.
    expect(run.lines).toContain(`✔ image: ${TestImage} present`);
    expect(run.lines.filter((l) => l.startsWith("✖"))).toHaveLength(3);
    for (const secret of [WrongTelegramToken, WrongDiscordToken, ApiKey]) {
      expect(run.output).not.toContain(secret);
    }
  });

  it("passes when the tokens are accepted and the model server serves the model, sending the key", async () => {
    const before = openai.modelListings.length;
    const run = await doctor({
      telegramToken: telegram.token,
      discordToken: discord.token,
      baseUrl: openai.baseUrl,
    });
    expect(run.lines).toContain(
      `✔ telegram (default): bot @${telegram.bot.username} (id ${telegram.bot.id})`,
    );
    expect(run.lines).toContainEqual(
      expect.stringMatching(/^✔ discord \(default\): bot mediagate \(id \d+\)$/),
    );
    expect(run.lines).toContain(`✔ agent (default): ${openai.baseUrl} serves model qwen2.5`);
    expect(run.lines.filter((l) => l.startsWith("✖"))).toEqual([]);
    expect(run.code, run.output).toBe(0);
    expect(openai.modelListings.slice(before)).toEqual([
      { authorization: `Bearer ${ApiKey}`, status: 200 },
    ]);
    for (const secret of [telegram.token, discord.token, ApiKey]) {
      expect(run.output).not.toContain(secret);
    }
  });

  it("fails on a refused API key and on a model the server does not serve", async () => {
    const refused = await doctor({
      telegramToken: telegram.token,
      discordToken: discord.token,
      baseUrl: openai.baseUrl,
      apiKey: "sk-doctor-wrong-key-secret",
    });
    expect(refused.code).toBe(1);
    expect(refused.lines).toContain(
      `✖ agent (default): API key refused by ${openai.baseUrl} (401 Unauthorized: Incorrect API key provided.)`,
    );
    expect(refused.output).not.toContain("sk-doctor-wrong-key-secret");

    const unknown = await doctor({
      telegramToken: telegram.token,
      discordToken: discord.token,
      baseUrl: openai.baseUrl,
      model: "mistral",
    });
    expect(unknown.code).toBe(1);
    expect(unknown.lines).toContain(
      `✖ agent (default): ${openai.baseUrl} does not serve model mistral (it lists qwen2.5:latest, llama3)`,
    );
  });
});
