import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeDiscord } from "../fakes/discord/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { runCli, spawnCli } from "./harness/cli.js";
import { createTempHome, TestImage, uniqueProfileName, waitUntil } from "./harness/gateway-home.js";

/**
 * A channel that fails for good while the gateway runs (docs/durability.md, "Channel health"):
 * Telegram answers `getUpdates` with 401, Discord closes the gateway with 4004 and answers REST
 * with 401 (the token was revoked). The real `mediagate start`
 * must not stay alive and healthy-looking with a dead channel: it stops and exits non-zero, so
 * a service manager restarts it or alerts, and says why without the token.
 */
describe("mediagate start with a token revoked while running", () => {
  let home = "";
  let fake: FakeTelegram;

  beforeAll(async () => {
    home = await createTempHome("cli-fatal");
    fake = new FakeTelegram({ token: "424242:AAH-revoked-while-running-secret" });
    await fake.start();
  });

  afterAll(async () => {
    await fake?.stop();
    await rm(home, { recursive: true, force: true });
  });

  it("exits with code 1 after a 401 on getUpdates, naming the 401 and never the token", async () => {
    const config = join(home, "mediagate.yaml");
    await writeFile(
      config,
      [
        `home: ${join(home, "home")}`,
        "profiles:",
        `  - name: ${uniqueProfileName("fatal")}`,
        `    telegram: { token: "${fake.token}", apiRoot: "${fake.apiRoot}", pollTimeoutSeconds: 1 }`,
        '    allowedUsers: ["telegram:1"]',
        `    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }`,
        "",
      ].join("\n"),
    );
    const run = runCli(["start", "--config", config], { home, timeoutMs: 60_000 });
    await waitUntil(() => fake.callsTo("getUpdates").length > 0, "the gateway to poll");
    fake.failNext("getUpdates", { kind: "error", status: 401, description: "Unauthorized" }, 5);
    const ended = await run;
    expect(ended.code).toBe(1);
    expect(ended.stderr).toContain("401");
    expect(ended.output).not.toContain("AAH-revoked-while-running-secret");
  });
});

describe("mediagate start with a Discord token revoked while running", () => {
  const token = "discord-revoked-while-running-Zq8x";
  let home = "";
  let fake: FakeDiscord;

  beforeAll(async () => {
    home = await createTempHome("cli-fatal-discord");
    fake = await FakeDiscord.start({ token });
  });

  afterAll(async () => {
    await fake?.close();
    await rm(home, { recursive: true, force: true });
  });

  it("exits with code 1 once Discord refuses the token (revoked: gateway close 4004, REST 401), never printing it", async () => {
    const config = join(home, "mediagate.yaml");
    await writeFile(
      config,
      [
        `home: ${join(home, "home")}`,
        "profiles:",
        `  - name: ${uniqueProfileName("fatal-dc")}`,
        `    discord: { token: "${token}", apiRoot: "${fake.apiRoot}" }`,
        '    allowedUsers: ["discord:300000000000000001"]',
        `    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }`,
        "",
      ].join("\n"),
    );
    const run = spawnCli(["start", "--config", config], { home, timeoutMs: 60_000 });
    await waitUntil(() => run.stderr().includes('"msg":"channel started"'), "Discord to connect");
    fake.revokeToken();
    const ended = await run.ended;
    expect(ended.code).toBe(1);
    expect(ended.stderr).toContain("Discord refused the bot token (gateway close 4004)");
    expect(ended.output).not.toContain(token);
  });
});
