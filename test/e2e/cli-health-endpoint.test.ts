import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { type RunningCli, spawnCli } from "./harness/cli.js";
import { createTempHome, releaseMounts, TestImage, waitUntil } from "./harness/gateway-home.js";

const Token = "710001:AAH-health-endpoint-secret";
const Stranger = 4242;

/** The JSON the endpoint answers, as far as this test reads it. */
interface HealthBody {
  status: string;
  channels: {
    platform: string;
    profile: string;
    state: string;
    lastOkMs?: number;
    detail?: string;
  }[];
  journal: { writable: boolean };
  engine: { reachable: boolean };
  queue: { running: number; queued: number };
}

/**
 * The health endpoint of a real `mediagate start` (docs/durability.md, "Channel health"): a
 * service manager's probe sees the Telegram channel go from `up` to `retrying` while the Bot API
 * fails `getUpdates`, with the reason and no token, and back to `up` once it answers again.
 */
describe("mediagate start with health.listen", () => {
  let home = "";
  let fake: FakeTelegram;
  let cli: RunningCli | undefined;
  let url = "";

  const health = async (): Promise<{ code: number; body: HealthBody; raw: string }> => {
    const response = await fetch(`${url}/health`);
    const raw = await response.text();
    return { code: response.status, body: JSON.parse(raw) as HealthBody, raw };
  };

  beforeAll(async () => {
    home = await createTempHome("health-endpoint");
    fake = new FakeTelegram({ token: Token });
    await fake.start();
    const config = join(home, "mediagate.yaml");
    await writeFile(
      config,
      [
        "profiles:",
        "  - name: default",
        '    telegram: { token: "${TELEGRAM_BOT_TOKEN}", apiRoot: "${TELEGRAM_API_ROOT}" }',
        `    sandbox: { image: "${TestImage}", diskLimitBytes: 0 }`,
        "health:",
        '  listen: "127.0.0.1:0"',
        "",
      ].join("\n"),
    );
    cli = spawnCli(["start", "-c", config], {
      home,
      env: { TELEGRAM_BOT_TOKEN: Token, TELEGRAM_API_ROOT: fake.apiRoot, LOG_LEVEL: "info" },
      timeoutMs: 120_000,
    });
    const running = cli;
    await waitUntil(
      () => /"msg":"health endpoint listening"/.test(running.stderr()),
      "the endpoint",
    );
    const line = running
      .stderr()
      .split("\n")
      .find((l) => l.includes('"msg":"health endpoint listening"'));
    url = (JSON.parse(line ?? "{}") as { url?: string }).url ?? "";
    await waitUntil(() => fake.polling, "the gateway to poll");
  });

  afterAll(async () => {
    cli?.signal("SIGTERM");
    const ended = await cli?.ended;
    expect(ended?.output ?? "").not.toContain(Token);
    await fake?.stop();
    await releaseMounts(home);
    await rm(home, { recursive: true, force: true });
  });

  it("answers ok with the channel up, the journal writable, the engine reachable and the queue", async () => {
    const { code, body } = await health();
    expect(code).toBe(200);
    expect(body).toMatchObject({
      status: "ok",
      journal: { writable: true },
      engine: { reachable: true },
      queue: { running: 0, queued: 0 },
    });
    expect(body.channels).toEqual([
      expect.objectContaining({
        platform: "telegram",
        profile: "default",
        state: "up",
        lastOkMs: expect.any(Number),
      }),
    ]);
  });

  it("reports the channel retrying, with the reason and without the token, while getUpdates fails; up again after", async () => {
    fake.serverErrorNext("getUpdates", 502, 1);
    // The long poll held open now returns with this update; the next one gets the 502.
    fake.sendPrivateText({ userId: Stranger, text: "hello?" });
    let seen: { code: number; body: HealthBody; raw: string } | undefined;
    await waitUntil(async () => {
      const now = await health();
      if (now.body.channels[0]?.state === "retrying") seen = now;
      return seen !== undefined;
    }, "the channel to be reported as retrying");
    expect(seen?.code).toBe(200);
    expect(seen?.body.status).toBe("degraded");
    expect(seen?.body.channels[0]?.detail).toMatch(/502/);
    expect(seen?.raw).not.toContain(Token);
    await waitUntil(
      async () => (await health()).body.channels[0]?.state === "up",
      "the channel to be up again",
    );
    expect((await health()).body.status).toBe("ok");
  });
});
