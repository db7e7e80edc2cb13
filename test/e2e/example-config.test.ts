import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig, readEnv } from "@mediagate/gateway";
import { installIdOf } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeDiscord } from "../fakes/discord/index.js";
import { FakeOpenAIServer, reply } from "../fakes/openai/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { type RunningCli, runCli, spawnCli } from "./harness/cli.js";
import { DockerObserver } from "./harness/docker-observer.js";
import { createTempHome, releaseMounts, waitUntil } from "./harness/gateway-home.js";

const ExampleFile = fileURLToPath(new URL("../../mediagate.example.yaml", import.meta.url));
const DefaultBotToken = "700001:AAH-example-default-bot-secret";
const LocalBotToken = "700002:AAH-example-local-bot-secret";
const TeamBotToken = "example-team-discord-bot-secret";

/** The first allowed user of a profile of the example, as a platform id. */
function firstUser(users: readonly string[], platform: string): string {
  const user = users.find((u) => u.startsWith(`${platform}:`));
  if (user === undefined) throw new Error(`the example allows no ${platform} user`);
  return user.slice(platform.length + 1);
}

/**
 * The shipped `mediagate.example.yaml`, unedited, run by the real `mediagate start -c …`: its
 * `${…}` references point the three profiles' bots and the local model server at the fakes
 * through the environment alone (docs/configuration.md). Each profile answers on its own bot,
 * the keyless model server gets no Authorization header and the profile's system prompt.
 */
describe("mediagate start -c mediagate.example.yaml against the fakes", () => {
  let home = "";
  let telegram: FakeTelegram;
  let localBot: FakeTelegram;
  let discord: FakeDiscord;
  let model: FakeOpenAIServer;
  let cli: RunningCli | undefined;
  let users = { telegram: 0, local: 0, discord: "" };

  beforeAll(async () => {
    home = await createTempHome("example-config");
    telegram = new FakeTelegram({ token: DefaultBotToken });
    localBot = new FakeTelegram({ token: LocalBotToken, botId: 700002 });
    await telegram.start();
    await localBot.start();
    discord = await FakeDiscord.start({ token: TeamBotToken });
    model = await FakeOpenAIServer.start();
    const env: Record<string, string> = {
      TELEGRAM_BOT_TOKEN: DefaultBotToken,
      TELEGRAM_API_ROOT: telegram.apiRoot,
      TEAM_DISCORD_BOT_TOKEN: TeamBotToken,
      TEAM_DISCORD_API_ROOT: discord.apiRoot,
      LOCAL_TELEGRAM_BOT_TOKEN: LocalBotToken,
      LOCAL_TELEGRAM_API_ROOT: localBot.apiRoot,
      LOCAL_MODEL_URL: model.baseUrl,
    };
    const example = await loadConfig({ path: ExampleFile, env: readEnv({ HOME: home, ...env }) });
    const [first, team, local] = example.profiles;
    users = {
      telegram: Number(firstUser(first?.allowedUsers ?? [], "telegram")),
      local: Number(firstUser(local?.allowedUsers ?? [], "telegram")),
      discord: firstUser(team?.admins ?? [], "discord"),
    };
    cli = spawnCli(["start", "-c", ExampleFile], { home, env, timeoutMs: 120_000 });
    await waitUntil(
      () => cli?.stderr().includes("serving default, team, local") === true,
      "the gateway to serve the example's three profiles",
      60_000,
    );
  });

  afterAll(async () => {
    cli?.signal("SIGKILL");
    await cli?.ended;
    const docker = new DockerObserver();
    const install = installIdOf(join(home, ".mediagate"));
    for (const c of await docker.containers({ "mediagate.install": install })) {
      await docker.removeForce(c.id);
    }
    await telegram?.stop();
    await localBot?.stop();
    await discord?.close();
    await model?.close();
    if (home !== "") {
      await releaseMounts(home);
      await rm(home, { recursive: true, force: true });
    }
  });

  it("runs a shell command for the Telegram profile and replies on its bot", async () => {
    telegram.sendPrivateText({ userId: users.telegram, text: "echo example-config-ok" });
    const sent = await telegram.waitFor(
      (call) =>
        call.method === "sendMessage" && String(call.params.text).includes("example-config-ok"),
      60_000,
    );
    expect(sent.params.chat_id).toBe(users.telegram);
  });

  it("answers the Discord profile's admin on the Discord bot", async () => {
    const dm = discord.world.dmChannel(users.discord);
    discord.sendDirectMessage({ content: "/status", authorId: users.discord });
    await waitUntil(() => discord.messagesIn(dm).length > 0, "the Discord reply", 60_000);
    expect(discord.messagesIn(dm)[0]?.content).toContain(`Session: agent:team:discord:dm:${dm}`);
  });

  it("answers the local profile from the keyless model server, with its system prompt", async () => {
    model.enqueue(reply.text("hello from the local model"));
    localBot.sendPrivateText({ userId: users.local, text: "hi" });
    await localBot.waitFor(
      (call) =>
        call.method === "sendMessage" &&
        String(call.params.text).includes("hello from the local model"),
      60_000,
    );
    const [request] = model.requests;
    expect(request?.authorization).toBeUndefined();
    expect(request?.body.model).toBe("llama3.1");
    expect(request?.body.messages[0]?.role).toBe("system");
    expect(request?.body.messages[0]?.content).toContain("Answer briefly.");
    expect(
      telegram.callsTo("sendMessage").some((c) => String(c.params.text).includes("local model")),
    ).toBe(false);
  });

  it("stops on SIGTERM with exit code 0, never printing a token", async () => {
    cli?.signal("SIGTERM");
    const ended = await cli?.ended;
    expect(ended?.code, ended?.stderr).toBe(0);
    for (const secret of [DefaultBotToken, LocalBotToken, TeamBotToken]) {
      expect(ended?.output).not.toContain(secret);
    }
  });
});

describe("mediagate start -c mediagate.example.yaml with a variable unset", () => {
  let home = "";
  beforeAll(async () => {
    home = await createTempHome("example-unset");
  });
  afterAll(async () => {
    if (home !== "") await rm(home, { recursive: true, force: true });
  });

  it("exits 1 naming the key and the variable, before any channel or container", async () => {
    const run = await runCli(["start", "-c", ExampleFile], {
      home,
      env: { TELEGRAM_BOT_TOKEN: DefaultBotToken, TEAM_DISCORD_BOT_TOKEN: TeamBotToken },
    });
    expect(run.code).toBe(1);
    // Placed at the key that names the variable.
    const lines = (await readFile(ExampleFile, "utf8")).split("\n");
    const line = lines.findIndex((l) => /^\s*token: \$\{LOCAL_TELEGRAM_BOT_TOKEN\}/.test(l));
    const column = (lines[line]?.indexOf("token:") ?? -1) + 1;
    expect(line).toBeGreaterThan(0);
    expect(run.stderr).toContain(
      `mediagate: invalid config ${ExampleFile}:${line + 1}:${column}: profiles[2].telegram.token: got \${LOCAL_TELEGRAM_BOT_TOKEN}, expected the environment variable LOCAL_TELEGRAM_BOT_TOKEN to be set (it is unset or empty)\n`,
    );
    expect(run.output).not.toContain(DefaultBotToken);
    expect(run.output).not.toContain(TeamBotToken);
  });
});
