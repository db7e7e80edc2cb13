import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;
const Member = 1002;
const Group = -100_600;
const Forum = -100_601;
const Topic = 9;

const StillWorking = "⏳ Still working…";
/** A member whose user id equals a forum topic's id (topic 222, member 222). */
const Member222 = 222;
const TopicPoster = 1003;

/**
 * Session identity over Telegram end to end (docs/sessions.md): groups are per user, forum topics are
 * shared by their members, one session's messages run in order, and a restarted gateway picks
 * up what was written while it was down — in the container it left behind.
 */
describe("gateway over Telegram: sessions", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start(
      "t-sess",
      [
        {
          admins: [Admin],
          allowed: [Member, Member222, TopicPoster],
          // Without the live status message, a long turn gets the one "still working" line.
          settings: { stillWorkingAfterSeconds: 1, progress: { enabled: false } },
          // Groups here are the bot's own team chats: every message is for it.
          telegram: { groups: { requireMention: false } },
        },
      ],
      { drainTimeoutMs: 5_000 },
    );
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  /**
   * What a user was answered, without the "still working" notice (this profile sends it after
   * 1 s, which a loaded machine can reach in any turn; only its own test asserts on it) and the
   * "queued" acknowledgements of messages that arrived while a turn ran (telegram-gateway-busy).
   */
  const replies = (user: number | string, since: number): string[] =>
    bot.texts(user, since).filter((text) => text !== StillWorking && !text.startsWith("⏳ queued"));

  it("makes one container for the profile when several sessions start at once", async () => {
    expect(await bot.containers()).toEqual([]);
    const since = bot.mark();
    bot.fake.sendPrivateText({ userId: Admin, text: "echo first" });
    bot.fake.sendPrivateText({ userId: Member, text: "echo second" });
    bot.fake.sendGroupText({ chatId: Group, userId: Member, text: "echo third" });
    await waitUntil(() => bot.fake.pendingUpdates === 0, "updates taken");
    await harness.gateway.idle();
    expect(replies(Admin, since)).toEqual(["first"]);
    expect(replies(Member, since)).toEqual(["second"]);
    expect(replies(Group, since)).toEqual(["third"]);
    expect(await bot.containers()).toHaveLength(1);
  });

  it("keys a group per user and a forum topic per topic, as /status shows", async () => {
    let since = bot.mark();
    await bot.handle((fake) =>
      fake.sendGroupText({ chatId: Group, userId: Admin, text: `/status@${fake.bot.username}` }),
    );
    expect(replies(Group, since)[0]).toContain(
      `Session: agent:${bot.profile}:telegram:group:${Group}:user:${Admin}\n`,
    );
    since = bot.mark();
    await bot.handle((fake) =>
      fake.sendTopicText({ chatId: Forum, threadId: Topic, userId: Admin, text: "/status" }),
    );
    expect(replies(Forum, since)[0]).toContain(
      `Session: agent:${bot.profile}:telegram:group:${Forum}:thread:${Topic}\n`,
    );
  });

  it("treats a plain reply in a supergroup as the group's session, not a topic", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendGroupText({ chatId: Group, userId: Admin, text: "/status", replyThreadId: 4242 }),
    );
    const [answer] = bot.callsIn(Group, since).filter((c) => c.method === "sendMessage");
    expect(String(answer?.params.text)).toContain(
      `Session: agent:${bot.profile}:telegram:group:${Group}:user:${Admin}\n`,
    );
    expect(answer?.params.message_thread_id).toBeUndefined();
  });

  it("gives two members of a group their own shell, and members of a topic a shared one", async () => {
    const say = (chat: "group" | "topic", userId: number, text: string) =>
      bot.handle((fake) =>
        chat === "group"
          ? fake.sendGroupText({ chatId: Group, userId, text })
          : fake.sendTopicText({ chatId: Forum, threadId: Topic, userId, text }),
      );
    await say("group", Admin, "mkdir -p /tmp/admin && cd /tmp/admin && pwd");
    await say("topic", Admin, "mkdir -p /tmp/topic && cd /tmp/topic && pwd");
    const since = bot.mark();
    await say("group", Member, "pwd");
    await say("topic", Member, "pwd");
    expect(replies(Group, since)).toEqual(["/workspace"]);
    expect(replies(Forum, since)).toEqual(["/tmp/topic"]);
  });

  it("gives forum topic 222 and member 222 of the same group different sessions", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendTopicText({
        chatId: Forum,
        threadId: Member222,
        userId: TopicPoster,
        text: "mkdir -p /tmp/t222 && cd /tmp/t222 && export MARK=topic; echo set",
      }),
    );
    await bot.handle((fake) =>
      fake.sendGroupText({ chatId: Forum, userId: Member222, text: 'echo "[$MARK]"; pwd' }),
    );
    await bot.handle((fake) =>
      fake.sendTopicText({
        chatId: Forum,
        threadId: Member222,
        userId: TopicPoster,
        text: 'echo "[$MARK]"; pwd',
      }),
    );
    expect(replies(Forum, since)).toEqual(["set", "[]\n/workspace", "[topic]\n/tmp/t222"]);
  });

  it("runs one session's messages one at a time, in order", async () => {
    const since = bot.mark();
    for (const text of ["sleep 0.3; echo one", "echo two", "sleep 0.1; echo three"]) {
      bot.fake.sendPrivateText({ userId: Admin, text });
    }
    await waitUntil(() => replies(Admin, since).length >= 3, "three answers");
    await harness.gateway.idle();
    expect(replies(Admin, since)).toEqual(["one", "two", "three"]);
  });

  it("tells the chat once that a long turn is still working, then answers", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Member, text: "sleep 2.5; echo finally" }),
    );
    expect(bot.texts(Member, since)).toEqual([StillWorking, "finally"]);
  });

  it("carries on when the container is stopped or removed behind its back", async () => {
    const ask = async (text: string) => {
      const since = bot.mark();
      await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text }));
      return replies(Admin, since);
    };
    expect(await ask("echo up")).toEqual(["up"]);
    const first = await bot.runningContainer();
    await harness.docker.stop(first);
    expect(await ask("echo after a stop")).toEqual(["after a stop"]);
    await harness.docker.removeForce(await bot.runningContainer());
    expect(await ask("echo after a removal")).toEqual(["after a removal"]);
    const last = await bot.runningContainer();
    expect(last).not.toBe(first);
    expect(await bot.containers()).toHaveLength(1);
  });

  it("after a restart, answers what was written while it was down, in the same container", async () => {
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "echo before > /workspace/before.txt; echo ok" }),
    );
    const container = await bot.runningContainer();
    await harness.stopGateway();
    const since = bot.mark();
    bot.fake.sendPrivateText({ userId: Admin, text: "cat /workspace/before.txt" });
    await harness.restart();
    await waitUntil(() => replies(Admin, since).length > 0, "the answer after the restart");
    await harness.gateway.idle();
    expect(replies(Admin, since)).toEqual(["before"]);
    expect(await bot.runningContainer()).toBe(container);
    expect(existsSync(join(bot.profileSlotDir(), "workspace", "before.txt"))).toBe(true);
  });

  it("answers a message already queued behind a running turn when it shuts down", async () => {
    const since = bot.mark();
    const answers = () => replies(Admin, since);
    await bot.post((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "sleep 0.5; echo first" }),
    );
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "echo second" }));
    await harness.restart();
    await waitUntil(() => answers().length >= 2, "both answers", 20_000);
    expect(answers()).toEqual(["first", "second"]);
  });

  it("a shutdown that outlasts its drain bound aborts the turn and leaves no process behind", async () => {
    const container = await bot.runningContainer();
    await bot.post((fake) => fake.sendPrivateText({ userId: Member, text: "sleep 1000" }));
    await waitUntil(
      async () => (await harness.docker.processes(container)).includes("sleep 1000"),
      "sleep running",
    );
    await harness.restart();
    expect(await bot.runningContainer()).toBe(container);
    expect(await harness.docker.processes(container)).not.toContain("sleep 1000");
  });

  it("does not lose a message that arrives while the gateway is shutting down", async () => {
    const since = bot.mark();
    // a turn in flight keeps the shutdown draining for a while
    await bot.post((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "sleep 2; echo drained" }),
    );
    const stopping = harness.stopGateway();
    // The shutdown has begun once the channel no longer holds a long poll open.
    await waitUntil(() => !bot.fake.polling, "the gateway to stop polling");
    bot.fake.sendPrivateText({ userId: Member, text: "echo written during the shutdown" });
    await stopping;
    await harness.restart();
    await waitUntil(
      () => replies(Member, since).length > 0,
      "the message written during the shutdown answered",
      20_000,
    );
    expect(replies(Admin, since)).toEqual(["drained"]);
    expect(replies(Member, since)).toEqual(["written during the shutdown"]);
  });
});
