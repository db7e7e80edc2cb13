import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeDiscord, type FakeInteraction } from "../fakes/discord/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { spawnCli } from "./harness/cli.js";
import { DockerObserver } from "./harness/docker-observer.js";
import {
  createTempHome,
  releaseMounts,
  TestImage,
  uniqueProfileName,
  waitUntil,
} from "./harness/gateway-home.js";

const DiscordToken = "discord-interaction-errors-Hw3k";
const DiscordAdmin = "300000000000000001";
const TelegramAdmin = 4242;

/**
 * One Discord interaction must not end the process that serves every channel: the real
 * `mediagate start` with one profile on Telegram and Discord, whose slash commands another
 * program registered (`discord.commands.register: false`), gets `/reset` with its `confirm`
 * option as text. The sender is told what was wrong; the process stays up, and Telegram and
 * Discord both go on answering (docs/operations.md, "Errors nothing caught").
 */
describe("mediagate start with a Discord slash command it cannot read", () => {
  const profile = uniqueProfileName("interactions");
  let home = "";
  let telegram: FakeTelegram;
  let discord: FakeDiscord;

  beforeAll(async () => {
    home = await createTempHome("cli-interactions");
    telegram = new FakeTelegram({ token: "515151:AAH-interaction-errors-secret" });
    await telegram.start();
    discord = await FakeDiscord.start({ token: DiscordToken });
  });

  afterAll(async () => {
    await telegram?.stop();
    await discord?.close();
    // The profile's container outlives the gateway (persistent), as it would in production.
    const docker = new DockerObserver();
    for (const c of await docker.containers({ "mediagate.profile": profile })) {
      await docker.removeForce(c.id);
    }
    if (home !== "") {
      await releaseMounts(home);
      await rm(home, { recursive: true, force: true });
    }
  });

  const answerOf = async (interaction: FakeInteraction) => {
    await waitUntil(() => (interaction.original?.content ?? "") !== "", "the slash answer");
    return interaction.original!.content;
  };

  it("answers the sender, stays up, and both channels go on answering", async () => {
    const config = join(home, "mediagate.yaml");
    await writeFile(
      config,
      [
        `home: ${join(home, "home")}`,
        "profiles:",
        `  - name: ${profile}`,
        `    telegram: { token: "${telegram.token}", apiRoot: "${telegram.apiRoot}", pollTimeoutSeconds: 1, commands: { register: false } }`,
        `    discord: { token: "${DiscordToken}", apiRoot: "${discord.apiRoot}", commands: { register: false } }`,
        `    admins: ["telegram:${TelegramAdmin}", "discord:${DiscordAdmin}"]`,
        `    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }`,
        "",
      ].join("\n"),
    );
    const run = spawnCli(["start", "--config", config], { home, timeoutMs: 90_000 });
    try {
      await waitUntil(
        () => (run.stderr().match(/"msg":"channel started"/g) ?? []).length === 2,
        "both channels to start",
      );
      const reset = discord.sendSlashCommand({
        name: "reset",
        options: [{ name: "confirm", type: 3, value: "yes" }],
        authorId: DiscordAdmin,
        unregistered: true,
      });
      expect(await answerOf(reset)).toMatch(
        /^⚠️ Not run: the option "confirm" of \/reset must be True or False, and Discord sent text\./,
      );

      telegram.sendPrivateText({ userId: TelegramAdmin, text: "echo telegram still here" });
      await waitUntil(
        () =>
          telegram
            .callsTo("sendMessage")
            .some((call) => call.params.text === "telegram still here"),
        "the Telegram answer",
      );
      const help = discord.sendSlashCommand({
        name: "help",
        authorId: DiscordAdmin,
        unregistered: true,
      });
      expect(await answerOf(help)).toContain("Commands (you are an admin):");
    } finally {
      run.signal("SIGTERM");
    }
    const ended = await run.ended;
    expect(ended.code).toBe(0);
    expect(ended.stderr).not.toContain('"level":50');
    expect(ended.stderr).not.toContain('"level":60');
  });
});
