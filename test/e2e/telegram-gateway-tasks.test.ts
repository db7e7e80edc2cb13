import { existsSync } from "node:fs";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../test-support/wait.js";
import type { FakeCallbackQuery, RecordedCall } from "../fakes/telegram/index.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 6101;
const Member = 6102;
const Other = 6103;
const Minute = 60_000;
const Hour = 60 * Minute;

/** The command each run of the test task runs: a fresh file, tagged for delivery. */
const Report = "date +%s > /workspace/report.txt; echo MEDIA:/workspace/report.txt";

/**
 * Scheduled tasks over Telegram (docs/schedules.md): the whole gateway, grammY against the fake,
 * the shell agent in a real Docker sandbox. Tasks come due by the harness's state clock, which
 * moves only when a test advances it.
 */
describe("scheduled tasks over Telegram", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  /** A second profile, whose config holds one operator task answering in Member's DM. */
  let operatorBot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-tasks", [
      {
        admins: [Admin],
        allowed: [Member, Other],
        settings: { schedules: { maxPerUser: 2, minIntervalSeconds: 300 } },
      },
      {
        admins: [Admin],
        allowed: [Member],
        settings: {
          schedules: {
            timezone: "Europe/Berlin",
            tasks: [
              {
                name: "op-report",
                every: "1h",
                text: "echo operator-report",
                chat: { platform: "telegram", chatId: Member, type: "dm" },
              },
            ],
          },
        },
      },
    ]);
    bot = harness.bot();
    operatorBot = harness.bot(1);
  });

  afterAll(async () => {
    await harness?.close();
  });

  // Each test starts with no tasks, whatever the one before left.
  afterEach(async () => {
    const { tasks } = bot.runtime.store;
    for (const task of await tasks.listTasks()) await tasks.deleteTask(task.id);
    const operator = operatorBot.runtime.store.tasks;
    for (const task of await operator.listTasks())
      if (task.owner !== "operator") await operator.deleteTask(task.id);
  });

  const idOf = (answer: string): string => {
    const id = /Task ([A-Za-z0-9_-]+):/.exec(answer)?.[1];
    if (id === undefined) throw new Error(`no task id in ${answer}`);
    return id;
  };

  /** The `/tasks` message with buttons `user` got after `since`. */
  function listed(user: number, since: number) {
    const call = bot
      .callsIn(user, since)
      .find((c) => c.method === "sendMessage" && c.ok && c.params.reply_markup !== undefined);
    const message = (call as RecordedCall | undefined)?.result as
      | {
          message_id: number;
          text: string;
          reply_markup: { inline_keyboard: { text: string; callback_data: string }[][] };
        }
      | undefined;
    return message;
  }

  /**
   * Waits for `done`, firing the state clock's timers that came due meanwhile: the scheduler
   * re-arms after each look at the store, and a timer armed at the current time fires only
   * when the clock is told to move.
   */
  async function ticksUntil(done: () => boolean, what: string): Promise<void> {
    await waitUntil(() => {
      harness.stateClock.advance(0);
      return done();
    }, what);
  }

  async function answered(query: FakeCallbackQuery): Promise<string | undefined> {
    await waitUntil(() => query.answer !== undefined, "the press answered");
    return query.answer?.text;
  }

  it("runs a member's task when it is due and delivers its MEDIA: file to the chat it was made in", async () => {
    const made = await bot.ask(Member, `/every 5m ${Report}`);
    expect(made).toMatch(/^✅ Task [A-Za-z0-9_-]+: every 5m, next run /);
    const since = bot.mark();
    harness.stateClock.advance(5 * Minute);
    await ticksUntil(() => bot.arrived(Member, since).length === 1, "the task's file");
    await harness.gateway.idle();
    const [file] = bot.arrived(Member, since);
    expect(file?.filename).toBe("report.txt");
    expect(file?.bytes.toString()).toMatch(/^\d+\n$/);
    // A scheduled run quotes no message and gets no reaction.
    expect(file?.params.reply_parameters).toBeUndefined();
    // Four minutes later nothing more; at ten minutes the second run.
    harness.stateClock.advance(4 * Minute);
    await harness.gateway.idle();
    expect(bot.arrived(Member, since)).toHaveLength(1);
    harness.stateClock.advance(Minute);
    await ticksUntil(() => bot.arrived(Member, since).length === 2, "the second run's file");
    await bot.ask(Member, `/tasks delete ${idOf(made)}`);
  }, 120_000);

  it("counts a run's timeout from its turn's start, not its wait behind its owner's turn", async () => {
    const id = idOf(await bot.ask(Member, "/every 1h echo task-answer"));
    const workspace = join(bot.profileSlotDir(), "workspace");
    const since = bot.mark();
    // The member's own turn waits for a file the test writes: the task's run queues behind it.
    await bot.post((fake) =>
      fake.sendPrivateText({
        userId: Member,
        text: "touch /workspace/waiting; while [ ! -f /workspace/go ]; do sleep 0.1; done; rm /workspace/go /workspace/waiting; echo typed-done",
      }),
    );
    await waitUntil(() => existsSync(join(workspace, "waiting")), "the member's turn running");
    harness.stateClock.advance(Hour);
    const store = bot.runtime.store.tasks;
    await waitUntil(async () => {
      harness.stateClock.advance(0);
      return (await store.recentRuns(id, 1))[0]?.outcome === "running";
    }, "the run handed over");
    // Longer than runTimeoutSeconds (Defaults: 30 minutes) in the queue: neither the run nor the
    // member's turn in front of it is stopped.
    harness.stateClock.advance(31 * Minute);
    await writeFile(join(workspace, "go"), "");
    await ticksUntil(
      () => bot.texts(Member, since).includes("task-answer"),
      "the task's answer after the member's",
    );
    const texts = bot.texts(Member, since);
    expect(texts.indexOf("typed-done")).toBeGreaterThanOrEqual(0);
    expect(texts.indexOf("typed-done")).toBeLessThan(texts.indexOf("task-answer"));
    expect(texts.join("\n")).not.toMatch(/stopped|timed out/i);
    await harness.gateway.idle();
    expect((await store.recentRuns(id, 1))[0]?.outcome).toBe("done");
  }, 120_000);

  it("lists a task to its owner and admins only; another user can neither see nor delete it", async () => {
    const id = idOf(await bot.ask(Member, "/every 1h echo mine"));
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Member, text: "/tasks" }));
    const mine = listed(Member, since);
    expect(mine?.text).toContain(`• ${id}: every 1h`);
    expect(mine?.reply_markup.inline_keyboard[0]?.map((b) => b.text)).toEqual([
      `⏸ Pause ${id}`,
      "Run now",
      "Delete",
    ]);
    expect(await bot.ask(Other, "/tasks")).toMatch(/^No tasks yet/);
    expect(await bot.ask(Other, `/tasks delete ${id}`)).toBe(
      `No task ${id} of yours here; /tasks lists yours.`,
    );
    // A forged press of the owner's Delete button by the other user changes nothing.
    const deleteButton = mine?.reply_markup.inline_keyboard[0]?.[2]?.text ?? "";
    const forged = bot.fake.pressButton({
      chatId: Member,
      messageId: mine?.message_id ?? 0,
      button: deleteButton,
      userId: Other,
    });
    expect(await answered(forged)).toBe(`No task ${id} of yours here; /tasks lists yours.`);
    const adminSince = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "/tasks" }));
    expect(listed(Admin, adminSince)?.text).toContain(`• ${id}: every 1h`);
    const status = await bot.ask(Admin, "/status");
    expect(status).toContain("Next task runs (1 active):");
    expect(status).toMatch(
      new RegExp(`• \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d UTC: task ${id}$`, "m"),
    );
    expect(await bot.ask(Admin, `/tasks delete ${id}`)).toMatch(
      new RegExp(`^🗑 Task ${id} deleted`),
    );
    expect(await bot.ask(Member, "/tasks")).toMatch(/^No tasks yet/);
  }, 120_000);

  it("pauses with a button and runs now with a button, delivering at once", async () => {
    const id = idOf(await bot.ask(Member, `/every 1h ${Report}`));
    let since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Member, text: "/tasks" }));
    let list = listed(Member, since);
    const pause = bot.fake.pressButton({
      chatId: Member,
      messageId: list?.message_id ?? 0,
      button: `⏸ Pause ${id}`,
      userId: Member,
    });
    await answered(pause);
    // The press is answered first, then its message edited (channels/telegram/choices.ts).
    const shown = () => String(bot.fake.botMessage(Member, list?.message_id ?? 0)?.text);
    await waitUntil(() => shown().startsWith(`⏸ Task ${id} paused`), "the list edited");
    expect(shown()).toMatch(new RegExp(`^⏸ Task ${id} paused`));
    since = bot.mark();
    harness.stateClock.advance(61 * Minute);
    await harness.gateway.idle();
    expect(bot.arrived(Member, since)).toEqual([]);
    await bot.handle((fake) => fake.sendPrivateText({ userId: Member, text: "/tasks" }));
    list = listed(Member, since);
    expect(list?.text).toContain("paused");
    const run = bot.fake.pressButton({
      chatId: Member,
      messageId: list?.message_id ?? 0,
      button: "Run now",
      userId: Member,
    });
    await answered(run);
    await waitUntil(() => bot.arrived(Member, since).length === 1, "the run-now file");
    await bot.ask(Member, `/tasks delete ${id}`);
  }, 120_000);

  it("refuses with clear messages: too often, too many, bad timing, a task making tasks", async () => {
    expect(await bot.ask(Member, "/every 1m echo hi")).toBe(
      "⛔ Tasks here may run at most every 5 minutes; this one would run every 1 minute. Choose a longer interval; nothing was made.",
    );
    expect(await bot.ask(Member, '/cron "* * * * *" echo hi')).toMatch(/at most every 5 minutes/);
    expect(await bot.ask(Member, "/every soon echo hi")).toBe(
      '⛔ "soon" is not an interval: write e.g. 30m, 1h or 1d. Nothing was made.',
    );
    expect(await bot.ask(Member, '/cron "0 25 * * *" echo hi')).toMatch(
      /^⛔ "0 25 \* \* \*" is not a cron pattern/,
    );
    expect(await bot.ask(Member, "/every 1h /every 1h echo")).toBe(
      "⛔ A task's text cannot be a task command; nothing was made.",
    );
    expect(await bot.ask(Member, "/at")).toMatch(/^⛔ Write \/at </);
    const a = idOf(await bot.ask(Member, "/every 1h echo a"));
    const b = idOf(await bot.ask(Member, "/at 23:59 echo b"));
    expect(await bot.ask(Member, "/every 1h echo c")).toBe(
      "⛔ You have 2 tasks already, the most one user may have here. Delete one (/tasks) first; nothing was made.",
    );
    await bot.ask(Member, `/tasks delete ${a}`);
    await bot.ask(Member, `/tasks delete ${b}`);
  }, 120_000);

  it("runs the config's operator task in its target chat; admins see it, members do not", async () => {
    const since = operatorBot.mark();
    harness.stateClock.advance(60 * Minute);
    await ticksUntil(
      () => operatorBot.texts(Member, since).includes("operator-report"),
      "the operator task's reply",
    );
    expect(await operatorBot.ask(Member, "/tasks")).toMatch(/^No tasks yet/);
    expect(await operatorBot.ask(Member, "/tasks delete op-op-report")).toBe(
      "No task op-op-report of yours here; /tasks lists yours.",
    );
    const adminSince = operatorBot.mark();
    await operatorBot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "/tasks" }));
    const shown = operatorBot.texts(Admin, adminSince).join("\n");
    expect(shown).toContain("• op-op-report: every 1h");
    expect(shown).toContain("config task op-report");
    expect(shown).toMatch(/last: done \(\d{4}-\d\d-\d\d \d\d:\d\d Europe\/Berlin\)/);
  }, 120_000);

  it("in a group, /tasks shows only the tasks of that group, even to an admin", async () => {
    const Team = -1006100;
    const inGroup = async (user: number, text: string) => {
      const since = bot.mark();
      await bot.handle((fake) => fake.sendGroupText({ chatId: Team, userId: user, text }));
      return bot.texts(Team, since).join("\n");
    };
    const dmTask = idOf(await bot.ask(Member, "/every 1h echo private-dm-task"));
    const groupTask = idOf(await inGroup(Member, "/every 2h echo team-task"));
    const shown = await inGroup(Admin, "/tasks");
    expect(shown).toContain("Tasks of this chat:");
    expect(shown).toContain(`• ${groupTask}: every 2h`);
    expect(shown).not.toContain(dmTask);
    expect(shown).not.toContain("private-dm-task");
    // In their DM the admin sees both.
    const all = await bot.ask(Admin, "/tasks");
    expect(all).toContain(dmTask);
    expect(all).toContain(groupTask);
  }, 120_000);
});
