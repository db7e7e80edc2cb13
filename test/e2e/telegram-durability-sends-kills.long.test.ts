import { noticeFor } from "@mediagate/media";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { botMethod, FaultProxy } from "../fakes/fault-proxy/index.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * Sending durably (docs/durability.md): the real TelegramChannel and grammY against
 * FakeTelegram behind the fault proxy, which loses answers after the fake handled a send.
 */

let fake: FakeTelegram;
let proxy: FaultProxy;
const disposers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  fake = new FakeTelegram();
  const { apiRoot } = await fake.start();
  proxy = new FaultProxy(apiRoot);
  await proxy.start();
});

afterEach(async () => {
  await Promise.all(disposers.splice(0).map((dispose) => dispose()));
  await proxy.stop();
  await fake.stop();
});

/** Sends the fake handled (posted to the chat), by method. */
const posted = (method: string) => fake.callsTo(method).filter((call) => call.ok);

// SIGKILL-and-restart tests of telegram-durability-sends.test.ts, in the long suite with the others (test/long/README.md).
describe("the outbox's own notices through a crash (the real CLI, SIGKILLed)", () => {
  it("at-most-once: a notice posted but not recorded is not sent again by the restarted gateway", async () => {
    const withheld = noticeFor({
      status: "denied",
      path: "/etc/shadow",
      reason: "",
      candidates: [],
    });
    const install = await CliInstall.create("tg-notice", {
      telegram: { token: fake.token, apiRoot: proxy.url, pollTimeoutSeconds: 1 },
      allowedUsers: ["telegram:77"],
      // The proxy holds the first sendMessage: on a slow machine a turn past the progress
      // threshold would post its status message first, and the proxy would hold that one.
      progress: { enabled: false },
    });
    disposers.push(() => install.dispose());
    // The reply is only a refused file: the one message is the outbox's notice. Telegram posts
    // it, and its answer never comes back.
    proxy.add(botMethod("sendMessage"), { kind: "hang", stage: "after" });
    await install.start();
    fake.sendPrivateText({ userId: 77, text: "echo MEDIA:/etc/shadow" });
    await waitUntil(() => posted("sendMessage").length === 1, "the notice to be posted");
    await install.kill();

    await install.start();
    await waitUntil(
      () => install.output().includes("not sent again (at-most-once)"),
      "the restarted gateway to settle the notice cut off mid-send",
    );
    fake.sendPrivateText({ userId: 77, text: "echo after-the-restart" });
    await waitUntil(
      () => posted("sendMessage").some((c) => c.params.text === "after-the-restart"),
      "the next reply",
    );
    expect(posted("sendMessage").map((c) => c.params.text)).toEqual([
      withheld,
      "after-the-restart",
    ]);
  });

  it("a reply cut off before Telegram got it, then its may-not-have-arrived notice too: the next start sends the notice", async () => {
    const install = await CliInstall.create("tg-notice-cut", {
      telegram: { token: fake.token, apiRoot: proxy.url, pollTimeoutSeconds: 1 },
      allowedUsers: ["telegram:77"],
      progress: { enabled: false },
    });
    disposers.push(() => install.dispose());
    const sends = () => proxy.requests.filter((r) => /\/sendMessage$/.test(r.path));
    // The reply's request is held before Telegram sees it, and the process dies there: its
    // step is left `sending`, the chat has nothing.
    proxy.add(botMethod("sendMessage"), { kind: "hang", stage: "before" });
    await install.start();
    const message = fake.sendPrivateText({ userId: 77, text: "echo first-reply" }).message;
    await waitUntil(() => sends().length === 1, "the reply's request");
    await install.kill();
    // The next start does not send the reply again (at-most-once) and tells the chat it may not
    // have arrived; that notice dies the same way, before Telegram sees it.
    proxy.add(botMethod("sendMessage"), { kind: "hang", stage: "before" });
    await install.start();
    await waitUntil(() => sends().length === 2, "the notice's request");
    await install.kill();

    await install.start();
    fake.sendPrivateText({ userId: 77, text: "echo after-the-restart" });
    await waitUntil(
      () => posted("sendMessage").some((c) => c.params.text === "after-the-restart"),
      "the next reply",
    );
    // Nothing of the first message ever reached the chat: the notice is its only word.
    const chat = posted("sendMessage");
    expect(chat.map((c) => c.params.text)).toEqual([
      expect.stringContaining("may not have arrived"),
      "after-the-restart",
    ]);
    expect(chat[0]?.params.reply_parameters).toMatchObject({ message_id: message?.message_id });
    expect(install.output()).toContain("notice cut off mid-send by a restart; sending it again");
  });
});
