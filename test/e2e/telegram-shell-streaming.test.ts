import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../test-support/wait.js";
import type { RecordedCall } from "../fakes/telegram/index.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const User = 5101;
const Group = -100_5101;

/** The status message's wait (`progress.afterSeconds`): the shell's output streams after it. */
const StatusAfterMs = 3_000;

/**
 * Prints `first` (then makes `/workspace/<flag>.printed`), waits until the test creates
 * `/workspace/<flag>`, then prints `second`.
 */
const waiting = (flag: string) =>
  `echo first; touch /workspace/${flag}.printed; while [ ! -f /workspace/${flag} ]; do sleep 0.05; done; echo second`;

const showsFirst = (call: RecordedCall) =>
  call.ok &&
  ["sendMessageDraft", "sendMessage", "editMessageText"].includes(call.method) &&
  String(call.params.text).startsWith("first");

/**
 * The `shell` agent's command output streamed (docs/streaming.md, "Agents"): the real gateway,
 * grammY against FakeTelegram, the real engine. A command that prints, then waits on a file
 * the test makes, shows its first line once it ran as long as the status message waits (the
 * harness's progress clock moves only when told); the final reply comes once. A quick command
 * streams nothing.
 */
describe("gateway over Telegram: the shell agent streams its command's output", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-shstream", [
      { allowed: [User], telegram: { groups: { requireMention: false } } },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  const workspace = (name: string) => join(bot.profileSlotDir(), "workspace", name);
  const release = (flag: string) => writeFile(workspace(flag), "", { mode: 0o644 });
  /** Waits until the command printed its first line, then lets the status's wait pass. */
  async function runLong(flag: string): Promise<void> {
    await waitUntil(() => existsSync(workspace(`${flag}.printed`)), "the first line printed");
    harness.progressClock.advance(StatusAfterMs);
  }

  it("streams nothing of a command that ends before the status's wait", async () => {
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: User, text: "echo quick" }));
    expect(bot.callsIn(User, since).filter((c) => c.method === "sendMessageDraft")).toEqual([]);
    expect(bot.texts(User, since)).toEqual(["quick"]);
  });

  it("shows a private chat the output so far as a draft, then the reply once", async () => {
    const since = bot.mark();
    await bot.post((fake) => fake.sendPrivateText({ userId: User, text: waiting("go-dm") }));
    await runLong("go-dm");
    await waitUntil(
      () => bot.callsIn(User, since).some((c) => c.method === "sendMessageDraft" && showsFirst(c)),
      "the first line as a draft while the command runs",
    );
    expect(bot.texts(User, since)).not.toContain("first\nsecond");
    // The draft shows progress: no status message was posted (and deleted at once) beside it.
    expect(
      bot
        .callsIn(User, since)
        .filter((c) => c.method === "sendMessage" || c.method === "deleteMessage"),
    ).toEqual([]);
    await release("go-dm");
    await harness.gateway.idle();
    expect(bot.texts(User, since).filter((text) => text.startsWith("first"))).toEqual([
      "first\nsecond",
    ]);
  });

  it("edits one message in a group while the command runs, and deletes it once the reply is there", async () => {
    const since = bot.mark();
    await bot.post((fake) =>
      fake.sendGroupText({ chatId: Group, userId: User, text: waiting("go-group") }),
    );
    await runLong("go-group");
    const preview = await (async () => {
      await waitUntil(
        () => bot.callsIn(Group, since).some(showsFirst),
        "the first line in a message while the command runs",
      );
      const call = bot.callsIn(Group, since).find(showsFirst)!;
      return call.method === "sendMessage"
        ? (call.result as { message_id: number }).message_id
        : Number(call.params.message_id);
    })();
    expect(bot.callsIn(Group, since).some((c) => c.method === "sendMessageDraft")).toBe(false);
    await release("go-group");
    await harness.gateway.idle();
    const finals = bot
      .callsIn(Group, since)
      .filter((c) => c.ok && c.method === "sendMessage" && c.params.text === "first\nsecond");
    expect(finals).toHaveLength(1);
    expect(bot.fake.botMessage(Group, preview)).toBeUndefined();
  });
});
