import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { botMethod, FaultProxy } from "../fakes/fault-proxy/index.js";
import { FakeTelegram, type RecordedCall } from "../fakes/telegram/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * What a crash or a lost answer could leave a chat to guess at (docs/durability.md): the real
 * CLI against FakeTelegram, SIGKILLed, or behind the fault proxy.
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
