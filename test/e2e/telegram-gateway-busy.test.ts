import { createHash, randomBytes } from "node:crypto";
import { collectedText, InterruptedTurnText, queuedText, queueFullText } from "@mediagate/gateway";
import type { Update } from "grammy/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FakeTelegram } from "../fakes/telegram/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1401;
const Member = 1402;

const sha = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/**
 * Messages that arrive while their session's turn runs (docs/sessions.md, "Busy sessions"), end
 * to end: the real gateway from its config, TelegramChannel and grammY against FakeTelegram,
 * the shell agent in the real engine. One profile per busy mode. The running turn waits in its
 * container for a file the test creates, so every message surely arrives while it runs.
 */
describe("gateway over Telegram: busy sessions", () => {
  let harness: TelegramGatewayHarness;
  const marker = randomBytes(4).toString("hex");
  let gates = 0;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start(
      "t-busy",
      [
        { admins: [Admin], allowed: [Member], settings: { maxQueuedMessages: 2 } },
        { admins: [Admin], settings: { busyMode: "interrupt" } },
        { admins: [Admin], settings: { busyMode: "collect", maxQueuedMessages: 3 } },
      ],
      { drainTimeoutMs: 1_000 },
    );
  });

  afterAll(async () => {
    await harness?.close();
  });

  /** Runs `argv` as root in the profile's container, once it is running. */
  async function inContainer(bot: TelegramBot, argv: readonly string[]): Promise<number> {
    let container: string | undefined;
    await waitUntil(async () => {
      const running = (await bot.containers()).filter((c) => c.state === "running");
      container = running[0]?.id;
      return container !== undefined;
    }, "the profile's container");
    return (await harness.docker.exec(container!, argv)).exitCode;
  }

  /**
   * A command that says it started (a file), then waits (bounded) until `open` creates its
   * gate file, then echoes; `started` waits until it runs.
   */
  function gated(echo: string) {
    const file = `/workspace/gate-${marker}-${gates++}`;
    return {
      command: `touch ${file}.started; i=0; while [ ! -f ${file} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo ${echo}`,
      started: (bot: TelegramBot) =>
        waitUntil(
          async () => (await inContainer(bot, ["test", "-f", `${file}.started`])) === 0,
          "the gated command to run",
        ),
      open: async (bot: TelegramBot) => {
        await inContainer(bot, ["touch", file]);
      },
    };
  }

  /** Sends `text` and waits until the chat has `count` texts since `since`. */
  async function sendAndSee(
    bot: TelegramBot,
    push: (fake: FakeTelegram) => Update,
    since: number,
    count: number,
    user = Admin,
  ): Promise<void> {
    await bot.post(push);
    await waitUntil(() => bot.texts(user, since).length >= count, `${count} texts in the chat`);
  }

  /** Waits until `command` runs in the profile's container; answers the container's id. */
  async function runningCommand(bot: TelegramBot, command: string): Promise<string> {
    let container = "";
    await waitUntil(async () => {
      const found = (await bot.containers()).find((c) => c.state === "running");
      if (found === undefined) return false;
      container = found.id;
      return (await harness.docker.processes(found.id)).includes(command);
    }, `${command} to run`);
    return container;
  }

  it("queue: acknowledges each waiting message with how many are ahead, refuses one over the cap, answers in order", async () => {
    const bot = harness.bot(0);
    const since = bot.mark();
    const first = gated("first");
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: first.command }));
    await first.started(bot);
    await sendAndSee(bot, (f) => f.sendPrivateText({ userId: Admin, text: "echo two" }), since, 1);
    await sendAndSee(
      bot,
      (f) => f.sendPrivateText({ userId: Admin, text: "echo three" }),
      since,
      2,
    );
    await sendAndSee(bot, (f) => f.sendPrivateText({ userId: Admin, text: "echo four" }), since, 3);
    expect(bot.texts(Admin, since)).toEqual([
      queuedText(1, true),
      queuedText(2, true),
      queueFullText(2, true),
    ]);
    expect(bot.texts(Admin, since)).toEqual([
      "⏳ queued — 1 ahead; /stop cancels",
      "⏳ queued — 2 ahead; /stop cancels",
      "⚠️ 2 messages are already waiting in this chat: this one was not run, nor will any sent before they are done. Send it again later, or /stop to cancel them.",
    ]);

    await first.open(bot);
    await waitUntil(() => bot.texts(Admin, since).length >= 6, "three answers");
    await harness.gateway.idle();
    expect(bot.texts(Admin, since).slice(3)).toEqual(["first", "two", "three"]);

    // The refused message was closed in the journal: a restart does not run it.
    await harness.restart();
    await harness.gateway.idle();
    expect(bot.texts(Admin, since)).toHaveLength(6);
    expect(bot.fake.pendingUpdates).toBe(0);
  });

  it("queue: a member's acknowledgement does not offer /stop, which is for admins", async () => {
    const bot = harness.bot(0);
    const since = bot.mark();
    const first = gated("member-first");
    await bot.post((fake) => fake.sendPrivateText({ userId: Member, text: first.command }));
    await first.started(bot);
    await sendAndSee(
      bot,
      (f) => f.sendPrivateText({ userId: Member, text: "echo member-two" }),
      since,
      1,
      Member,
    );
    await first.open(bot);
    await waitUntil(() => bot.texts(Member, since).length >= 3, "both answers");
    expect(bot.texts(Member, since)).toEqual(["⏳ queued — 1 ahead", "member-first", "member-two"]);
  });

  it("interrupt: a new message stops the running turn and its processes, and runs next", async () => {
    const bot = harness.bot(1);
    const since = bot.mark();
    const sleeper = "sleep 1417";
    await bot.post((fake) =>
      fake.sendPrivateText({ userId: Admin, text: `${sleeper}; echo never` }),
    );
    const container = await runningCommand(bot, sleeper);
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "echo after" }));
    await waitUntil(() => bot.texts(Admin, since).includes("after"), "the new message's answer");
    await harness.gateway.idle();
    expect(bot.texts(Admin, since)).toEqual([InterruptedTurnText, "after"]);
    expect(await harness.docker.processes(container)).not.toContain(sleeper);
  });

  it("collect: merges the messages sent meanwhile into one turn, files kept, one over the cap refused", async () => {
    const bot = harness.bot(2);
    const since = bot.mark();
    const first = gated("collect-first");
    const files = [randomBytes(1500), randomBytes(2500)];
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: first.command }));
    await first.started(bot);
    await sendAndSee(bot, (f) => f.sendPrivateText({ userId: Admin, text: "echo two" }), since, 1);
    await sendAndSee(
      bot,
      (f) =>
        f.sendMedia({
          userId: Admin,
          kind: "document",
          bytes: files[0],
          fileName: "a.bin",
          caption: 'for f in $MEDIAGATE_ATTACHMENTS; do sha256sum "$f"; done',
        }).update,
      since,
      2,
    );
    await sendAndSee(
      bot,
      (f) =>
        f.sendMedia({ userId: Admin, kind: "document", bytes: files[1], fileName: "b.bin" }).update,
      since,
      3,
    );
    await sendAndSee(bot, (f) => f.sendPrivateText({ userId: Admin, text: "echo five" }), since, 4);
    expect(bot.texts(Admin, since)).toEqual([
      collectedText(1, true),
      collectedText(2, true),
      collectedText(3, true),
      queueFullText(3, true),
    ]);
    expect(bot.texts(Admin, since)[1]).toBe(
      "⏳ queued — 2 messages go in the next turn together; /stop cancels",
    );

    await first.open(bot);
    await waitUntil(() => bot.texts(Admin, since).length >= 6, "two answers");
    await harness.gateway.idle();
    expect(bot.texts(Admin, since).slice(4)).toEqual([
      "collect-first",
      [
        "two",
        `${sha(files[0]!)}  /workspace/inbox/a.bin`,
        `${sha(files[1]!)}  /workspace/inbox/b.bin`,
      ].join("\n"),
    ]);

    // Every message of the merged turn was closed with its reply: a restart runs none again.
    await harness.restart();
    await harness.gateway.idle();
    expect(bot.texts(Admin, since)).toHaveLength(6);
  });

  it("collect: messages collected behind a turn cut off by a stop come back after the restart", async () => {
    const bot = harness.bot(2);
    const since = bot.mark();
    await bot.post((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "sleep 30; echo cut-off" }),
    );
    await runningCommand(bot, "sleep 30");
    await sendAndSee(
      bot,
      (f) => f.sendPrivateText({ userId: Admin, text: "echo kept-1" }),
      since,
      1,
    );
    await sendAndSee(
      bot,
      (f) => f.sendPrivateText({ userId: Admin, text: "echo kept-2" }),
      since,
      2,
    );
    // The drain deadline (1 s) cuts the running turn off; the collected messages stay recorded.
    await harness.restart();
    await waitUntil(
      () => bot.texts(Admin, since).includes("kept-2"),
      "the collected messages after the restart",
    );
    await harness.gateway.idle();
    const texts = bot.texts(Admin, since);
    expect(texts.join("\n")).toMatch(/kept-1\n(.*\n)*kept-2/);
    expect(texts.some((t) => t.startsWith("⚠️ The gateway restarted while working on"))).toBe(true);
    expect(texts).not.toContain("cut-off");
  });
});
