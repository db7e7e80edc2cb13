import { describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { useWebhookCli, WebhookUser } from "./harness/webhook-cli.js";

/**
 * Webhook mode (docs/telegram-webhooks.md) through the real CLI and engine: redeliveries. Its
 * own file, apart from the channel's tests in telegram-webhook.test.ts: it starts a gateway
 * process and takes seconds, and the e2e suite runs files, not tests, in parallel. The kills
 * after the 200 and during albums are in telegram-webhook-cli-kills.long.test.ts.
 */

describe("webhook mode through the real CLI and engine", () => {
  const User = WebhookUser;
  const webhook = useWebhookCli();
  const { install, replies } = webhook;

  it("answers a redelivered update 200 and runs it once", async () => {
    const cli = await install();
    await cli.start();
    const sent = webhook.fake.sendPrivateText({ userId: User, text: "echo just-once" });
    await waitUntil(() => replies().includes("just-once"), "the message to be answered");
    expect(await webhook.fake.webhook.deliverAgain(sent)).toBe(200);
    expect(await webhook.fake.webhook.deliverAgain(sent)).toBe(200);
    webhook.fake.sendPrivateText({ userId: User, text: "echo next" });
    await waitUntil(() => replies().includes("next"), "the next message to be answered");
    expect(replies()).toEqual(["just-once", "next"]);
    expect(cli.output()).toContain("message redelivered by the platform was recorded before");
  });
});
