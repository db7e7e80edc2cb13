import { noticeFor } from "@mediagate/media";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { botMethod, FaultProxy } from "../fakes/fault-proxy/index.js";
import { FakeTelegram, type RecordedCall } from "../fakes/telegram/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * What a crash or a lost answer could leave a chat to guess at (docs/durability.md): the real
 * CLI against FakeTelegram, SIGKILLed, or behind the fault proxy; and the outbox's own notices
 * through a SIGKILL (the SIGKILL half of telegram-durability-sends.test.ts).
 */

const User = 77;
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

async function install(prefix: string, profile: Record<string, unknown> = {}): Promise<CliInstall> {
  const made = await CliInstall.create(prefix, {
    telegram: { token: fake.token, apiRoot: proxy.url, pollTimeoutSeconds: 1 },
    allowedUsers: [`telegram:${User}`],
    ...profile,
  });
  disposers.push(() => made.dispose());
  return made;
}

/** Calls to the user's chat that Telegram handled, from `since` on. */
const inChat = (since = 0): RecordedCall[] =>
  fake.calls.slice(since).filter((call) => call.ok && String(call.params.chat_id) === String(User));

const isStatusPost = (call: RecordedCall) =>
  call.method === "sendMessage" && String(call.params.text).startsWith("⏳ working");

const texts = (calls: readonly RecordedCall[]) =>
  calls.filter((call) => call.method === "sendMessage").map((call) => String(call.params.text));

/** What the chat read, leaving out the line a message waiting behind a busy turn gets. */
const answers = (calls: readonly RecordedCall[]) =>
  texts(calls).filter((text) => !text.startsWith("⏳ queued"));

describe("a status message a SIGKILL left showing", () => {
  it("is edited to say its turn was cut off before the restarted gateway sends anything else to the chat", async () => {
    const gateway = await install("tg-status", { progress: { afterSeconds: 1 } });
    await gateway.start();
    const sent = fake.sendPrivateText({
      userId: User,
      text: "touch /tmp/began; sleep 120; echo never",
    });
    const messageId = sent.message!.message_id;
    // Its command runs: the turn is cut off by the kill, not run again.
    await waitUntil(() => gateway.hasFile("/tmp/began"), "the command to run");
    await waitUntil(() => inChat().some(isStatusPost), "the status message");
    const post = inChat().find(isStatusPost)!;
    const statusId = (post.result as { message_id: number }).message_id;
    // The first edit comes after the status was recorded with its turn.
    await waitUntil(
      () =>
        inChat().some((c) => c.method === "editMessageText" && c.params.message_id === statusId),
      "the status to be edited",
    );
    await gateway.kill();
    expect(String(fake.botMessage(User, statusId)?.text)).toMatch(/^⏳ working/);
    expect(fake.reactions.on(String(User), messageId)).toEqual(["👨‍💻"]);

    const restart = fake.calls.length;
    await gateway.start();
    await waitUntil(
      () => texts(inChat(restart)).some((text) => text.includes("The gateway restarted")),
      "the notice for the cut-off turn",
    );
    const after = inChat(restart).filter((call) => call.method !== "sendChatAction");
    expect(after[0]).toMatchObject({
      method: "editMessageText",
      params: { message_id: statusId, text: "⏹ cut off by a restart" },
    });
    expect(texts(after)).toHaveLength(1);
    expect(fake.botMessage(User, statusId)?.text).toBe("⏹ cut off by a restart");
    // Its stale "working" reaction gives way to "failed", as the notice says.
    await waitUntil(
      () => fake.reactions.on(String(User), messageId).join("") === "👎",
      "the failed reaction",
    );
  }, 120_000);
});

describe("a reply text whose answer was lost (at-most-once)", () => {
  it("a reset after the body was written: the text once, and once the line that it may not have arrived", async () => {
    const gateway = await install("tg-text-reset", { progress: { enabled: false } });
    proxy.add(botMethod("sendMessage"), { kind: "reset", stage: "after" });
    await gateway.start();
    fake.sendPrivateText({ userId: User, text: "echo the-answer" });
    await waitUntil(() => answers(inChat()).length === 2, "the reply and its notice");
    // The session's next turn comes after the first reply's delivery attempt.
    fake.sendPrivateText({ userId: User, text: "echo next" });
    await waitUntil(() => answers(inChat()).includes("next"), "the next reply");
    expect(answers(inChat())).toEqual([
      "the-answer",
      "⚠️ This reply may not have arrived in full: the connection broke (or the gateway restarted) while it was being sent, and it is not sent twice.",
      "next",
    ]);
  });
});

/** Sends the fake handled (posted to the chat), by method. */
const posted = (method: string) => fake.callsTo(method).filter((call) => call.ok);

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
