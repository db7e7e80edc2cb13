import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RecordedCall } from "../fakes/telegram/index.js";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1501;

/**
 * The live status message of a long turn (docs/sessions.md, "Live progress"), end to end: the
 * real gateway from its config (progress defaults: after 3 s, at most one edit a second),
 * TelegramChannel and grammY against FakeTelegram's sendMessage, editMessageText and
 * deleteMessage, the shell agent in the real engine. The status clock is the harness's manual
 * one: the test moves it second by second instead of waiting; the turn itself waits in its
 * container for a file the test creates. Streaming is off: with it, the command's output
 * would take the status message over once it prints (telegram-shell-streaming.test.ts).
 */
describe("gateway over Telegram: live progress of a long turn", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  const marker = randomBytes(4).toString("hex");
  let gates = 0;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-progress", [
      { admins: [Admin], settings: { stream: "off" } },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  /** A command that says it started, then waits (bounded) until `open` creates its gate file. */
  function gated(echo: string) {
    const file = `/workspace/gate-${marker}-${gates++}`;
    const inContainer = async (argv: readonly string[]) => {
      let container: string | undefined;
      await waitUntil(async () => {
        container = (await bot.containers()).find((c) => c.state === "running")?.id;
        return container !== undefined;
      }, "the profile's container");
      return (await harness.docker.exec(container!, argv)).exitCode;
    };
    return {
      command: `touch ${file}.started; i=0; while [ ! -f ${file} ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo ${echo}`,
      started: () =>
        waitUntil(
          async () => (await inContainer(["test", "-f", `${file}.started`])) === 0,
          "the gated command to run",
        ),
      open: async () => {
        await inContainer(["touch", file]);
      },
    };
  }

  const calls = (method: string, since: number): RecordedCall[] =>
    bot.callsIn(Admin, since).filter((call) => call.method === method);
  const isStatus = (call: RecordedCall) =>
    call.method === "sendMessage" && String(call.params.text).startsWith("⏳ working");

  /** Waits until the status has a timer armed, then moves its clock on by `ms`. */
  async function advance(ms: number): Promise<void> {
    const clock = harness.progressClock;
    await waitUntil(() => clock.pending().length > 0, "a status timer armed");
    clock.advance(ms);
  }

  it("posts one status after 3 s, edits it at most once a second, deletes it after the one reply — edits that fail included", async () => {
    const since = bot.mark();
    const turn = gated(`done-${marker}`);
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: turn.command }));
    await turn.started();

    await advance(3000);
    await waitUntil(() => calls("sendMessage", since).some(isStatus), "the status message");
    const status = calls("sendMessage", since).find(isStatus)!;
    const statusId = (status.result as { message_id: number }).message_id;
    // What runs: the command, its first 120 characters.
    const [head, doing] = String(status.params.text).split("\n");
    expect(head).toBe("⏳ working — 3s");
    expect(doing).toBe(`$ ${turn.command.slice(0, 119)}…`);

    const editsDone = (count: number) =>
      waitUntil(() => calls("editMessageText", since).length >= count, `${count} edit calls`);
    for (let second = 1; second <= 3; second++) {
      await advance(1000);
      await editsDone(second);
    }
    // A 502 and then a 429 (retry after 4 s): neither is retried, nor posts anything.
    bot.fake.serverErrorNext("editMessageText", 502);
    await advance(1000);
    await editsDone(4);
    bot.fake.rateLimitNext("editMessageText", 4);
    await advance(1000);
    await editsDone(5);
    for (let second = 0; second < 3; second++) await advance(1000); // paused: no call
    await advance(1000);
    await editsDone(6);
    expect(calls("editMessageText", since).map((c) => [c.status, c.params.text])).toEqual([
      [200, expect.stringMatching(/^⏳ working — 4s\n\$ touch /)],
      [200, expect.stringMatching(/^⏳ working — 5s\n/)],
      [200, expect.stringMatching(/^⏳ working — 6s\n/)],
      [502, expect.stringMatching(/^⏳ working — 7s\n/)],
      [429, expect.stringMatching(/^⏳ working — 8s\n/)],
      [200, expect.stringMatching(/^⏳ working — 12s\n/)],
    ]);
    expect(
      calls("editMessageText", since).every((c) => Number(c.params.message_id) === statusId),
    ).toBe(true);

    await turn.open();
    await waitUntil(() => calls("deleteMessage", since).length > 0, "the status deleted");
    await harness.gateway.idle();

    const sent = calls("sendMessage", since).filter((c) => c.ok);
    expect(sent.map((c) => c.params.text)).toEqual([status.params.text, `done-${marker}`]);
    const [deleted] = calls("deleteMessage", since);
    expect(deleted).toMatchObject({ ok: true, params: { message_id: statusId } });
    expect(deleted!.seq).toBeGreaterThan(sent[1]!.seq);
    expect(bot.fake.botMessage(Admin, statusId)).toBeUndefined();
    // The clock moved 13 s past the status: at most one edit per second, never more.
    expect(calls("editMessageText", since).length).toBeLessThanOrEqual(13);
    expect(harness.progressClock.pending()).toEqual([]);
  });

  it("deletes the status of a turn stopped by /stop", async () => {
    const since = bot.mark();
    const turn = gated(`never-${marker}`);
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: turn.command }));
    await turn.started();
    await advance(3000);
    await waitUntil(() => calls("sendMessage", since).some(isStatus), "the status message");
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "/stop" }));
    await waitUntil(() => calls("deleteMessage", since).length > 0, "the status deleted");
    await harness.gateway.idle();
    const texts = bot.texts(Admin, since);
    expect(texts.filter((t) => !t.startsWith("⏳ working"))).toEqual([
      expect.stringMatching(/^🛑 Stopped: aborted the running turn/),
    ]);
    expect(calls("deleteMessage", since).map((c) => c.ok)).toEqual([true]);
  });

  it("marks the status ended when Telegram refuses to delete it", async () => {
    const since = bot.mark();
    const turn = gated(`kept-${marker}`);
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: turn.command }));
    await turn.started();
    await advance(3000);
    await waitUntil(() => calls("sendMessage", since).some(isStatus), "the status message");
    await advance(1000);
    await waitUntil(() => calls("editMessageText", since).length === 1, "one edit");
    bot.fake.failNext("deleteMessage", {
      kind: "error",
      status: 400,
      description: "Bad Request: message can't be deleted for everyone",
    });
    await turn.open();
    await waitUntil(() => calls("editMessageText", since).length === 2, "the final edit");
    await harness.gateway.idle();
    const status = calls("sendMessage", since).find(isStatus)!;
    const statusId = (status.result as { message_id: number }).message_id;
    expect(bot.fake.botMessage(Admin, statusId)).toMatchObject({ text: "⌛ ended after 4s" });
    expect(bot.texts(Admin, since).filter((t) => t === `kept-${marker}`)).toHaveLength(1);
  });
});
