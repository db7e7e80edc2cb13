import { afterEach, beforeEach } from "vitest";
import { closedPort } from "../../../test-support/net.js";
import { FakeTelegram } from "../../fakes/telegram/index.js";
import { CliInstall } from "./cli-install.js";

/** The one user the webhook CLI files' bot lets in. */
export const WebhookUser = 78;
const Secret = "s3cret_token-for-tests";

/** What {@link useWebhookCli} gives a test file; read its fields inside a test. */
export interface WebhookCli {
  /** This test's Bot API fake, retrying nothing on its own (an hour between attempts). */
  readonly fake: FakeTelegram;
  /** A gateway in webhook mode on this test's port, disposed after the test. */
  install(): Promise<CliInstall>;
  /** The texts the bot posted to {@link WebhookUser}, in order. */
  replies(): string[];
}

/**
 * Webhook mode through the real CLI (docs/telegram-webhooks.md), a fresh fake and port per
 * test: the set-up of telegram-webhook-cli.test.ts and its SIGKILL half in the long suite.
 */
export function useWebhookCli(): WebhookCli {
  let fake: FakeTelegram | undefined;
  let port = 0;
  const installs: CliInstall[] = [];
  beforeEach(async () => {
    fake = new FakeTelegram({ webhook: { retryDelayMs: () => 3_600_000 } });
    await fake.start();
    port = await closedPort();
  });
  afterEach(async () => {
    await Promise.all(installs.splice(0).map((install) => install.dispose()));
    await fake?.stop();
  });
  const current = (): FakeTelegram => {
    if (fake === undefined) throw new Error("useWebhookCli: read it inside a test");
    return fake;
  };
  return {
    get fake() {
      return current();
    },
    async install() {
      const created = await CliInstall.create(
        "tg-webhook",
        {
          telegram: {
            token: current().token,
            apiRoot: current().apiRoot,
            webhook: {
              url: `http://127.0.0.1:${port}/telegram`,
              listen: `127.0.0.1:${port}`,
              secretToken: Secret,
            },
          },
          allowedUsers: [`telegram:${WebhookUser}`],
          progress: { enabled: false },
        },
        { recovery: { rerunInterrupted: true } },
      );
      installs.push(created);
      return created;
    },
    replies: () =>
      current()
        .callsTo("sendMessage")
        .filter((call) => call.ok && String(call.params.chat_id) === String(WebhookUser))
        .map((call) => String(call.params.text)),
  };
}
