import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import { waitUntil } from "../../test-support/wait.js";
import type { FakeDiscord, FakeInteraction, StoredMessage } from "../fakes/discord/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";

const Token = "discord-gateway-tasks-token-Qe7v";
const Member = "300000000000000077";
const Other = "300000000000000078";
const Admin = "300000000000000079";
const Ephemeral = 64;
const Minute = 60_000;

/**
 * Scheduled tasks over Discord (docs/schedules.md): discord.js against the fake, the shell agent
 * in the real engine. `/tasks` with its buttons (message components) in DMs, who may see and
 * act on a task; a task made bare in a guild channel answers there when it comes due, by a
 * clock the test moves.
 */
describe("scheduled tasks over Discord", () => {
  const clock = manualClock(Date.now());
  let harness: DiscordGatewayHarness;
  let fake: FakeDiscord;
  let channel = "";

  beforeAll(async () => {
    harness = await DiscordGatewayHarness.start("e2e-dtasks", Token, {
      profile: {
        admins: [`discord:${Admin}`],
        allowedUsers: [`discord:${Member}`, `discord:${Other}`],
      },
      discord: (discord) => ({ channels: [discord.guild.channels[1]!.id] }),
      options: {
        taskClock: { wallMs: clock.now, monoMs: clock.now },
        taskSchedule: clock.schedule,
      },
    });
    ({ fake } = harness);
    channel = fake.guild.channels[1]!.id;
  });

  afterAll(async () => {
    await harness?.close();
  });

  // Each test starts with no tasks, whatever the one before left.
  afterEach(async () => {
    const tasks = harness.gateway.runtimes.get(harness.profile)!.store.tasks;
    for (const task of await tasks.listTasks()) await tasks.deleteTask(task.id);
  });

  /** A message's text as its reader sees it (the gateway escapes Discord's markdown). */
  const shown = (message: StoredMessage | undefined) =>
    (message?.content ?? "").replace(/\\([\\_*~`|>])/g, "$1");

  const posts = (from: number) => fake.messagesIn(channel).slice(from);
  const dm = (user: string) => fake.world.dmChannel(user);

  /** Sends a DM and answers what the bot said back in it (its first message). */
  const ask = async (user: string, content: string): Promise<string> => {
    const since = fake.messagesIn(dm(user)).length;
    fake.sendDirectMessage({ content, authorId: user });
    await waitUntil(() => fake.messagesIn(dm(user)).length > since, `the answer to ${content}`);
    return fake.messagesIn(dm(user))[since]!.content;
  };

  const idOf = (answer: string): string => {
    const id = /Task ([A-Za-z0-9_-]+):/.exec(answer)?.[1];
    if (id === undefined) throw new Error(`no task id in ${answer}`);
    return id;
  };

  const buttonsOf = (message: StoredMessage | undefined) =>
    (
      (message?.json.components ?? []) as { components: { label: string; custom_id: string }[] }[]
    ).flatMap((row) => row.components.map((button) => button.label));

  /** `/tasks` in `user`'s DM: the list posted with buttons. */
  const list = async (user: string): Promise<StoredMessage> => {
    const since = fake.messagesIn(dm(user)).length;
    fake.sendDirectMessage({ content: "/tasks", authorId: user });
    await waitUntil(
      () =>
        fake
          .messagesIn(dm(user))
          .slice(since)
          .some((m) => buttonsOf(m).length > 0),
      "the list with buttons",
    );
    return fake
      .messagesIn(dm(user))
      .slice(since)
      .find((m) => buttonsOf(m).length > 0)!;
  };

  const press = async (owner: string, message: StoredMessage, button: string, by: string) => {
    const interaction: FakeInteraction = fake.pressButton({
      channelId: dm(owner),
      messageId: message.id,
      button,
      authorId: by,
    });
    await waitUntil(() => interaction.callback !== undefined, "the press answered");
    return interaction;
  };

  const current = (user: string, id: string) => fake.messagesIn(dm(user)).find((m) => m.id === id);

  it("lists a task to its owner and admins only; another user can neither see nor delete it", async () => {
    const id = idOf(await ask(Member, "/every 1h echo mine"));
    const mine = await list(Member);
    expect(shown(mine)).toContain(`• ${id}: every 1h`);
    expect(buttonsOf(mine)).toEqual([`⏸ Pause ${id}`, "Run now", "Delete"]);
    expect(await ask(Other, "/tasks")).toMatch(/^No tasks yet/);
    expect(await ask(Other, `/tasks delete ${id}`)).toBe(
      `No task ${id} of yours here; /tasks lists yours.`,
    );
    // A press of the owner's Delete button by the other user is refused, seen by them only.
    const forged = await press(Member, mine, "Delete", Other);
    expect(forged.callback).toEqual({ type: 4, flags: Ephemeral });
    expect(forged.original?.content).toBe(`No task ${id} of yours here; /tasks lists yours.`);
    expect(buttonsOf(current(Member, mine.id))).toHaveLength(3);
    const store = harness.gateway.runtimes.get(harness.profile)!.store.tasks;
    expect((await store.getTask(id))?.owner).toBe(`discord:${Member}`);
    expect(shown(await list(Admin))).toContain(`• ${id}: every 1h`);
    expect(await ask(Admin, `/tasks delete ${id}`)).toMatch(new RegExp(`^🗑 Task ${id} deleted`));
    expect(await ask(Member, "/tasks")).toMatch(/^No tasks yet/);
  }, 120_000);

  it("pauses, runs now and deletes with the buttons of /tasks", async () => {
    const id = idOf(await ask(Member, "/every 1h echo ran-$((40 + 2))"));
    const first = await list(Member);
    const pause = await press(Member, first, `⏸ Pause ${id}`, Member);
    expect(pause.callback?.type).toBe(7);
    expect(shown(current(Member, first.id))).toMatch(new RegExp(`^⏸ Task ${id} paused by `));
    expect(buttonsOf(current(Member, first.id))).toEqual([]);
    // Paused: its due time passes without a run.
    const before = fake.messagesIn(dm(Member)).length;
    clock.advance(61 * Minute);
    await harness.gateway.idle();
    expect(fake.messagesIn(dm(Member)).slice(before)).toEqual([]);

    const second = await list(Member);
    expect(shown(second)).toContain("paused");
    expect(buttonsOf(second)).toEqual([`▶ Resume ${id}`, "Run now", "Delete"]);
    const since = fake.messagesIn(dm(Member)).length;
    const run = await press(Member, second, "Run now", Member);
    expect(run.callback?.type).toBe(7);
    await waitUntil(
      () =>
        fake
          .messagesIn(dm(Member))
          .slice(since)
          .some((m) => m.content === "ran-42"),
      "the run-now answer",
    );
    const third = await list(Member);
    const deleted = await press(Member, third, "Delete", Member);
    expect(deleted.callback?.type).toBe(7);
    expect(shown(current(Member, third.id))).toMatch(new RegExp(`^🗑 Task ${id} deleted by `));
    const store = harness.gateway.runtimes.get(harness.profile)!.store.tasks;
    expect(await store.getTask(id)).toBeUndefined();
  }, 120_000);

  it("delivers a due task's MEDIA: file to the guild channel it was made in", async () => {
    let from = fake.messagesIn(channel).length;
    fake.sendGuildMessage(channel, {
      content:
        "/every 10m date +%s > /workspace/tick.txt; echo tick; echo MEDIA:/workspace/tick.txt",
      authorId: Member,
    });
    await waitUntil(
      () => posts(from).some((p) => p.content.startsWith("✅ Task")),
      "the task made",
    );
    expect(posts(from)[0]?.content).toMatch(/^✅ Task [A-Za-z0-9_-]+: every 10m, next run /);
    from = fake.messagesIn(channel).length;
    clock.advance(10 * Minute);
    await waitUntil(() => {
      clock.advance(0);
      return posts(from).some((p) => p.files.length > 0);
    }, "the task's file");
    const post = posts(from).find((p) => p.files.length > 0);
    expect(post?.files.map((f) => f.filename)).toEqual(["tick.txt"]);
    expect(post?.files[0]?.bytes.toString()).toMatch(/^\d+\n$/);
    await waitUntil(() => posts(from).some((p) => p.content === "tick"), "the task's text");
    // No message is behind a scheduled run: it replies to none.
    expect(post?.replyTo).toBeUndefined();
  }, 120_000);

  // Last in the file: the fake keeps refusing the channel it denies.
  it("fails each run whose channel the bot lost, and pauses the task after three (docs/schedules.md)", async () => {
    const id = idOf(await ask(Other, "/every 5m echo gone-report"));
    const tasks = harness.gateway.runtimes.get(harness.profile)!.store.tasks;
    // Discord now answers every send to that DM 403 Missing Access (code 50001).
    fake.denyAccess(dm(Other));
    for (let run = 1; run <= 3; run++) {
      clock.advance(5 * Minute);
      await waitUntil(async () => {
        clock.advance(0);
        const runs = await tasks.recentRuns(id, 10);
        return runs.filter((r) => r.outcome !== "running").length === run;
      }, `run ${run} ended`);
    }
    const runs = await tasks.recentRuns(id, 10);
    expect(runs.map((r) => r.outcome)).toEqual(["failed", "failed", "failed"]);
    expect(runs[0]?.detail).toMatch(/^its chat is unreachable for the bot: .*Missing Access/);
    const task = await tasks.getTask(id);
    expect(task).toMatchObject({ paused: true, unreachableInARow: 3 });
    expect(task?.pausedReason).toBe(runs[0]?.detail);
  }, 120_000);
});
