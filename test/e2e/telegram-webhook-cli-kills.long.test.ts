import { describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { useWebhookCli, WebhookUser } from "./harness/webhook-cli.js";

/**
 * Webhook mode (docs/telegram-webhooks.md) through the real CLI and engine, SIGKILLed and
 * started again: after the 200, with an album cut by the kill, during an album's turn. In the
 * long suite with the other SIGKILL-and-restart files (test/long/README.md); the redelivery
 * test stays in the everyday suite in telegram-webhook-cli.test.ts.
 */

describe("webhook mode through the real CLI and engine", () => {
  const User = WebhookUser;
  const webhook = useWebhookCli();
  const { install, replies } = webhook;

  it("answers by webhook; killed after the 200, the update runs after the restart, once", async () => {
    const cli = await install();
    await cli.start();
    webhook.fake.sendPrivateText({ userId: User, text: "echo by-webhook" });
    await waitUntil(() => replies().includes("by-webhook"), "the webhook message to be answered");

    webhook.fake.sendPrivateText({ userId: User, text: "sleep 3; echo after-crash" });
    await waitUntil(
      () => webhook.fake.webhook.attempts.filter((a) => a.status === 200).length === 2,
      "the second update to be answered 200",
    );
    await cli.kill();
    expect(replies()).not.toContain("after-crash");
    expect(webhook.fake.pendingUpdates).toBe(0);

    await cli.start();
    await waitUntil(() => replies().includes("after-crash"), "the recorded update to run");
    await waitUntil(() => cli.output().includes('"msg":"turn finished"'), "the turn to finish");
    expect(replies().filter((text) => text === "after-crash")).toHaveLength(1);
    expect(webhook.fake.webhook.attempts.map((a) => a.status)).toEqual([200, 200]);
  });

  /** Paths a `PrintPaths` reply listed. */
  const PrintPaths = 'for f in $MEDIAGATE_ATTACHMENTS; do echo "P:$f"; done';
  const albumItem = (group: string, name: string, caption?: string) => ({
    kind: "document" as const,
    bytes: Buffer.from(`bytes of ${name}`),
    fileName: name,
    userId: User,
    mediaGroupId: group,
    ...(caption === undefined ? {} : { caption }),
  });
  const answered = () => webhook.fake.webhook.attempts.filter((a) => a.status === 200).length;

  it("killed after two of an album's four items were recorded, runs the album once with all four after the restart", async () => {
    const cli = await install();
    await cli.start();
    const group = "2800000000000001";
    webhook.fake.sendMedia(albumItem(group, "k1.txt", PrintPaths));
    webhook.fake.sendMedia(albumItem(group, "k2.txt"));
    await waitUntil(() => answered() === 2, "the first two items to be answered 200");
    await cli.kill();
    expect(replies()).toEqual([]);
    // Sent while the gateway is down: Telegram holds them and posts them after the restart.
    webhook.fake.sendMedia(albumItem(group, "k3.txt"));
    webhook.fake.sendMedia(albumItem(group, "k4.txt"));

    await cli.start();
    await waitUntil(() => replies().length > 0, "the album to be answered");
    await waitUntil(() => cli.output().includes('"msg":"turn finished"'), "the turn to finish");
    expect(replies()).toEqual([
      ["k1", "k2", "k3", "k4"].map((name) => `P:/workspace/inbox/${name}.txt`).join("\n"),
    ]);
    expect(webhook.fake.pendingUpdates).toBe(0);
  });

  it("killed while the album's turn runs, runs it again once, as one turn (rerunInterrupted)", async () => {
    const cli = await install();
    await cli.start();
    const group = "2800000000000002";
    webhook.fake.sendMedia(
      albumItem(group, "x1.txt", `touch /workspace/x-ran; sleep 3; ${PrintPaths}`),
    );
    webhook.fake.sendMedia(albumItem(group, "x2.txt"));
    webhook.fake.sendMedia(albumItem(group, "x3.txt"));
    await waitUntil(() => cli.hasFile("/workspace/x-ran"), "the album's command to start");
    expect(cli.output()).toContain("album items run as one message");
    await cli.kill();
    expect(replies()).toEqual([]);

    await cli.start();
    await waitUntil(() => replies().length > 0, "the album to be answered");
    await waitUntil(() => cli.output().includes('"msg":"turn finished"'), "the turn to finish");
    // Saved again by the second run, under `-2` names (docs/inbound-media.md).
    expect(replies()).toEqual([
      ["x1", "x2", "x3"].map((name) => `P:/workspace/inbox/${name}-2.txt`).join("\n"),
    ]);
  });
});
