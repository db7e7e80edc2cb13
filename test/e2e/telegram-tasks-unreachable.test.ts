import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../test-support/wait.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 6201;
const Member = 6202;
const Other = 6203;
const Minute = 60_000;

/**
 * A task whose chat is gone for the bot (docs/schedules.md, "Chats that are gone"): the whole
 * gateway, grammY against the fake Telegram, the shell agent in a real Docker sandbox. Tasks
 * come due by the harness's state clock, which moves only when the test advances it.
 */
describe("scheduled tasks whose Telegram chat is gone", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-gone", [
      {
        admins: [Admin],
        allowed: [Member, Other],
        settings: { schedules: { minIntervalSeconds: 300 } },
      },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  const idOf = (answer: string): string => {
    const id = /Task ([A-Za-z0-9_-]+):/.exec(answer)?.[1];
    if (id === undefined) throw new Error(`no task id in ${answer}`);
    return id;
  };

  /** Waits for `done`, firing the state clock's timers that came due meanwhile. */
  async function ticksUntil(done: () => Promise<boolean>, what: string): Promise<void> {
    await waitUntil(async () => {
      harness.stateClock.advance(0);
      return done();
    }, what);
  }

  const outcomes = async (id: string) =>
    (await bot.runtime.store.tasks.recentRuns(id, 10)).map((run) => run.outcome);

  it("records each run in a blocked chat failed, pauses the task after three and runs it no more; a task in another chat runs on", async () => {
    const gone = idOf(await bot.ask(Member, "/every 5m echo gone-report"));
    const kept = idOf(await bot.ask(Other, "/every 5m echo kept-report"));
    bot.fake.blockChat(Member);
    const since = bot.mark();
    for (let run = 1; run <= 3; run++) {
      harness.stateClock.advance(5 * Minute);
      await ticksUntil(async () => {
        const [gones, kepts] = [await outcomes(gone), await outcomes(kept)];
        return gones.filter((o) => o !== "running").length === run && kepts[0] === "done";
      }, `run ${run} of both tasks ended`);
      await harness.gateway.idle();
      const runs = await bot.runtime.store.tasks.recentRuns(gone, 10);
      expect(runs.map((r) => r.outcome)).toEqual(Array(run).fill("failed"));
      expect(runs[0]?.detail).toBe(
        "its chat is unreachable for the bot: Telegram sendMessage failed: 403 Forbidden: bot was blocked by the user",
      );
      expect((await bot.runtime.store.tasks.getTask(gone))?.paused).toBe(run === 3);
    }
    // The blocked chat's replies were tried and refused; nothing reached it.
    expect(bot.callsIn(Member, since).some((c) => c.method === "sendMessage")).toBe(true);
    expect(bot.texts(Member, since)).toEqual([]);
    const paused = await bot.runtime.store.tasks.getTask(gone);
    expect(paused?.pausedReason).toMatch(/blocked by the user/);
    expect(
      harness.logs.some(
        (line) =>
          line.includes('"task paused: its runs could not reach its chat"') &&
          line.includes(`"taskId":"${gone}"`) &&
          line.includes('"level":40'),
      ),
    ).toBe(true);

    // Two more due times: the paused task does not run, the other one does.
    for (let run = 4; run <= 5; run++) {
      harness.stateClock.advance(5 * Minute);
      await ticksUntil(
        async () => (await outcomes(kept)).filter((o) => o === "done").length === run,
        `run ${run} of the task in the other chat`,
      );
      await harness.gateway.idle();
    }
    expect(await outcomes(gone)).toEqual(["failed", "failed", "failed"]);
    expect(bot.texts(Other, since).filter((t) => t === "kept-report")).toHaveLength(5);
    expect((await bot.runtime.store.tasks.getTask(kept))?.paused).toBe(false);

    // An admin's /tasks says why it is paused; resuming clears it.
    const listed = await bot.ask(Admin, "/tasks");
    expect(listed).toContain(
      `• ${gone}: every 5m — paused: its chat is unreachable for the bot: Telegram sendMessage failed: 403 Forbidden: bot was blocked by the user`,
    );
    expect(await bot.ask(Admin, `/tasks resume ${gone}`)).toMatch(
      new RegExp(`^▶ Task ${gone} resumed`),
    );
    const resumed = await bot.runtime.store.tasks.getTask(gone);
    expect(resumed).toMatchObject({ paused: false, unreachableInARow: 0 });
    expect(resumed?.pausedReason).toBeUndefined();
    await bot.ask(Admin, `/tasks delete ${gone}`);
    await bot.ask(Admin, `/tasks delete ${kept}`);
  }, 180_000);
});
