import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { closedPort } from "../../test-support/net.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * Webhook mode (docs/telegram-webhooks.md) through the real CLI and engine: redeliveries. Its
 * own file, apart from the channel's tests in telegram-webhook.test.ts: it starts a gateway
 * process and takes seconds, and the e2e suite runs files, not tests, in parallel. The kills
 * after the 200 and during albums are in telegram-webhook-cli-kills.long.test.ts.
 */

const Secret = "s3cret_token-for-tests";
let fake: FakeTelegram;
let url: string;
let port: number;

beforeEach(async () => {
  fake = new FakeTelegram({ webhook: { retryDelayMs: () => 3_600_000 } });
  await fake.start();
  port = await closedPort();
  url = `http://127.0.0.1:${port}/telegram`;
});

afterEach(async () => {
  await fake.stop();
});

describe("webhook mode through the real CLI and engine", () => {
  const User = 78;
  const installs: CliInstall[] = [];
  afterEach(async () => {
    await Promise.all(installs.splice(0).map((install) => install.dispose()));
  });
  /** The texts the bot posted to the user, in order. */
  const replies = () =>
    fake
      .callsTo("sendMessage")
      .filter((call) => call.ok && String(call.params.chat_id) === String(User))
      .map((call) => String(call.params.text));

  async function install(): Promise<CliInstall> {
    const created = await CliInstall.create(
      "tg-webhook",
      {
        telegram: {
          token: fake.token,
          apiRoot: fake.apiRoot,
          webhook: { url, listen: `127.0.0.1:${port}`, secretToken: Secret },
        },
        allowedUsers: [`telegram:${User}`],
        progress: { enabled: false },
      },
      { recovery: { rerunInterrupted: true } },
    );
    installs.push(created);
    return created;
  }

  it("answers a redelivered update 200 and runs it once", async () => {
    const cli = await install();
    await cli.start();
    const sent = fake.sendPrivateText({ userId: User, text: "echo just-once" });
    await waitUntil(() => replies().includes("just-once"), "the message to be answered");
    expect(await fake.webhook.deliverAgain(sent)).toBe(200);
    expect(await fake.webhook.deliverAgain(sent)).toBe(200);
    fake.sendPrivateText({ userId: User, text: "echo next" });
    await waitUntil(() => replies().includes("next"), "the next message to be answered");
    expect(replies()).toEqual(["just-once", "next"]);
    expect(cli.output()).toContain("message redelivered by the platform was recorded before");
  });
});
