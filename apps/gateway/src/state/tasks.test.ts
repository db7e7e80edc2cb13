import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { StateBackends, useStateBackend } from "../../test/fixtures/state-backends.js";
import { MIGRATIONS, migrate } from "./schema.js";
import type { NewTask } from "./tasks.js";

let clockMs = 1_000;

const task = (id: string, owner: string, extra: Partial<NewTask> = {}): NewTask => ({
  id,
  owner,
  timing: { kind: "every", everyMs: 3_600_000 },
  timezone: "UTC",
  text: "echo hi",
  chat: { platform: "telegram", chatId: "1", chatType: "dm" },
  catchUp: "once",
  nextDueMs: 5_000,
  ...extra,
});

describe("the SQLite task tables (schema v7)", () => {
  it("are added to a version 6 database, keeping its sessions", async () => {
    const db = new Database(join(await tempDirForTest("mg-tasks-"), "state.db"));
    migrate(db, MIGRATIONS.slice(0, 6));
    db.prepare("INSERT INTO sessions VALUES ('k', 'sid', 0, 0)").run();
    expect(migrate(db, MIGRATIONS.slice(0, 7))).toEqual({ from: 6, to: 7 });
    expect(db.prepare("SELECT session_id FROM sessions").all()).toEqual([{ session_id: "sid" }]);
    expect(() =>
      db
        .prepare(
          `INSERT INTO tasks (id, owner, timing, timezone, text, chat, catch_up, next_due_at, created_at)
           VALUES ('a', 'u', '{}', 'UTC', 't', '{}', 'sometimes', 0, 0)`,
        )
        .run(),
    ).toThrow(/CHECK/);
    db.close();
  });
});

describe("the SQLite user time zones (schema v8)", () => {
  it("are added to a version 7 database, keeping its tasks", async () => {
    const db = new Database(join(await tempDirForTest("mg-tasks-"), "state.db"));
    migrate(db, MIGRATIONS.slice(0, 7));
    db.prepare(
      `INSERT INTO tasks (id, owner, timing, timezone, text, chat, catch_up, next_due_at, created_at)
       VALUES ('a', 'u', '{}', 'UTC', 't', '{}', 'once', 0, 0)`,
    ).run();
    expect(migrate(db, MIGRATIONS.slice(0, 8))).toEqual({ from: 7, to: 8 });
    expect(db.prepare("SELECT id FROM tasks").all()).toEqual([{ id: "a" }]);
    expect(db.prepare("SELECT count(*) AS n FROM user_timezones").get()).toEqual({ n: 0 });
    db.close();
  });
});

describe("the SQLite tasks' chat reach (schema v9)", () => {
  it("is added to a version 8 database: its tasks count no runs in a row, paused for no reason", async () => {
    const db = new Database(join(await tempDirForTest("mg-tasks-"), "state.db"));
    migrate(db, MIGRATIONS.slice(0, 8));
    db.prepare(
      `INSERT INTO tasks (id, owner, timing, timezone, text, chat, catch_up, paused, next_due_at, created_at)
       VALUES ('a', 'u', '{}', 'UTC', 't', '{}', 'once', 1, 0, 0)`,
    ).run();
    expect(migrate(db, MIGRATIONS.slice(0, 9))).toEqual({ from: 8, to: 9 });
    expect(
      db.prepare("SELECT id, paused, unreachable_in_a_row, paused_reason FROM tasks").all(),
    ).toEqual([{ id: "a", paused: 1, unreachable_in_a_row: 0, paused_reason: null }]);
    db.close();
  });
});

describe.each(StateBackends)("the task store on %s", (kind) => {
  const backend = useStateBackend(kind, "tasks");
  const open = () => {
    clockMs = 1_000;
    return backend.open({ now: () => clockMs });
  };

  it("keeps each user's own time zone until it is changed or forgotten", async () => {
    const { tasks } = await open();
    expect(await tasks.userTimezone("telegram:1")).toBeUndefined();
    await tasks.setUserTimezone("telegram:1", "Europe/Berlin");
    await tasks.setUserTimezone("discord:1", "Asia/Tokyo");
    expect(await tasks.userTimezone("telegram:1")).toBe("Europe/Berlin");
    await tasks.setUserTimezone("telegram:1", "America/New_York");
    expect(await tasks.userTimezone("telegram:1")).toBe("America/New_York");
    expect(await tasks.userTimezone("discord:1")).toBe("Asia/Tokyo");
    await tasks.setUserTimezone("telegram:1", undefined);
    expect(await tasks.userTimezone("telegram:1")).toBeUndefined();
    expect(await tasks.userTimezone("discord:1")).toBe("Asia/Tokyo");
  });

  it("refuses a task over the user's or the profile's cap, and counts only active chat tasks", async () => {
    const { tasks } = await open();
    const caps = { maxPerUser: 2, maxPerProfile: 3 };
    expect((await tasks.addTask(task("a", "telegram:1"), caps)).status).toBe("added");
    expect((await tasks.addTask(task("b", "telegram:1"), caps)).status).toBe("added");
    expect(await tasks.addTask(task("c", "telegram:1"), caps)).toEqual({
      status: "user_full",
      count: 2,
    });
    expect((await tasks.addTask(task("d", "telegram:2"), caps)).status).toBe("added");
    expect(await tasks.addTask(task("e", "telegram:3"), caps)).toEqual({
      status: "profile_full",
      count: 3,
    });
    await tasks.syncOperatorTasks([task("op", "operator", { name: "report" })]);
    expect((await tasks.listTasks("telegram:1")).map((t) => t.id)).toEqual(["a", "b"]);
    expect((await tasks.listTasks()).map((t) => t.id).sort()).toEqual(["a", "b", "d", "op"]);
    expect(await tasks.deleteTask("a")).toBe(true);
    expect(await tasks.deleteTask("a")).toBe(false);
    expect((await tasks.addTask(task("c", "telegram:1"), caps)).status).toBe("added");
  });

  it("keeps no more of a user's done one-time tasks than their cap: older ones go as new ones come", async () => {
    const { tasks } = await open();
    const caps = { maxPerUser: 2, maxPerProfile: 3 };
    // Done tasks do not count against the caps, so without a bound a user could make and
    // finish one-time tasks until the disk is full.
    for (let i = 0; i < 6; i++) {
      clockMs += 1_000;
      const id = `at${i}`;
      const made = await tasks.addTask(
        task(id, "telegram:1", { timing: { kind: "at", atMs: 5_000 } }),
        caps,
      );
      expect(made.status).toBe("added");
      const run = { taskId: id, dueMs: 5_000, outcome: "done", atMs: clockMs } as const;
      await tasks.advanceTask({ id, fromDueMs: 5_000, nextDueMs: undefined, run }, 0);
    }
    expect((await tasks.listTasks("telegram:1")).map((t) => [t.id, t.active])).toEqual([
      ["at3", false],
      ["at4", false],
      ["at5", false],
    ]);
    expect(await tasks.recentRuns("at0", 5)).toEqual([]);
  });

  it("adds a task made again (same id, owner and text) as it is, past the caps", async () => {
    const { tasks } = await open();
    const caps = { maxPerUser: 1, maxPerProfile: 1 };
    const added = await tasks.addTask(task("a", "telegram:1"), caps);
    expect(added.status).toBe("added");
    clockMs += 5_000;
    expect(await tasks.addTask(task("a", "telegram:1", { nextDueMs: 9_000 }), caps)).toEqual(added);
    expect(await tasks.listTasks()).toHaveLength(1);
    // Another owner's or another text under the same id is not the same task.
    await expect(
      tasks.addTask(task("a", "telegram:2"), { maxPerUser: 5, maxPerProfile: 5 }),
    ).rejects.toThrow();
    await expect(
      tasks.addTask(task("a", "telegram:1", { text: "other" }), {
        maxPerUser: 5,
        maxPerProfile: 5,
      }),
    ).rejects.toThrow();
  });

  it("stores a NUL in a task's name, prompt and run detail as U+FFFD, on both stores", async () => {
    const { tasks } = await open();
    const caps = { maxPerUser: 5, maxPerProfile: 5 };
    const nul = task("n", "telegram:1", { name: "na\u0000me", text: "echo \u0000 hi" });
    expect((await tasks.addTask(nul, caps)).status).toBe("added");
    const run = {
      taskId: "n",
      dueMs: 5_000,
      outcome: "failed",
      atMs: 5_001,
      detail: "x\u0000y",
    } as const;
    expect(await tasks.advanceTask({ id: "n", fromDueMs: 5_000, nextDueMs: 9_000, run }, 0)).toBe(
      true,
    );
    expect(await tasks.getTask("n")).toMatchObject({
      name: "na\uFFFDme",
      text: "echo \uFFFD hi",
      lastRun: { detail: "x\uFFFDy" },
    });
  });

  it("moves a task past a due time once, with its run, and keeps the operator's tasks by name", async () => {
    const { tasks } = await open();
    await tasks.addTask(task("a", "telegram:1"), { maxPerUser: 5, maxPerProfile: 5 });
    const run = { taskId: "a", dueMs: 5_000, outcome: "running", atMs: 5_001 } as const;
    const advance = { id: "a", fromDueMs: 5_000, nextDueMs: 9_000, run };
    expect(await tasks.advanceTask(advance, 0)).toBe(true);
    expect(await tasks.advanceTask(advance, 0)).toBe(false);
    expect(await tasks.getTask("a")).toMatchObject({ nextDueMs: 9_000, lastRun: run });
    expect(await tasks.nextDueMs()).toBe(9_000);
    // Moved back (the wall clock stepped back): no run is written.
    const back = { id: "a", fromDueMs: 9_000, nextDueMs: 8_000 };
    expect(await tasks.advanceTask(back, 0)).toBe(true);
    expect(await tasks.getTask("a")).toMatchObject({ nextDueMs: 8_000, lastRun: run });
    expect(await tasks.recentRuns("a", 5)).toEqual([run]);
    await tasks.advanceTask({ id: "a", fromDueMs: 8_000, nextDueMs: 9_000 }, 0);
    expect(await tasks.setPaused("a", true, 0)).toBe(true);
    expect(await tasks.nextDueMs()).toBeUndefined();

    await tasks.syncOperatorTasks([task("op1", "operator", { name: "report", nextDueMs: 7_000 })]);
    await tasks.syncOperatorTasks([
      task("op2", "operator", { name: "report", text: "new text", nextDueMs: 8_000 }),
      task("op3", "operator", { name: "other" }),
    ]);
    const operator = await tasks.listTasks("operator");
    expect(operator.map((t) => [t.id, t.name, t.text, t.nextDueMs])).toEqual([
      ["op1", "report", "new text", 7_000],
      ["op3", "other", "echo hi", 5_000],
    ]);
    // A new timing starts over: its next due time and its anchor are the new ones.
    clockMs = 50_000;
    await tasks.syncOperatorTasks([
      task("op4", "operator", {
        name: "report",
        timing: { kind: "every", everyMs: 60_000 },
        nextDueMs: 61_000,
      }),
    ]);
    expect(await tasks.getTask("op1")).toMatchObject({
      timing: { kind: "every", everyMs: 60_000 },
      nextDueMs: 61_000,
      createdAtMs: 50_000,
    });
    await tasks.syncOperatorTasks([]);
    expect(await tasks.listTasks("operator")).toEqual([]);
  });

  it("pauses a task at the runs in a row that found its chat gone, keeping why, until it is resumed", async () => {
    const { tasks } = await open();
    await tasks.addTask(task("a", "telegram:1"), { maxPerUser: 5, maxPerProfile: 5 });
    const gone = { reached: false, reason: "blocked by the user", pauseAfter: 3 } as const;
    expect(await tasks.recordReach("a", gone)).toEqual({ unreachableInARow: 1, paused: false });
    expect(await tasks.recordReach("a", gone)).toEqual({ unreachableInARow: 2, paused: false });
    // A run that reached the chat starts the count again.
    expect(await tasks.recordReach("a", { reached: true })).toEqual({
      unreachableInARow: 0,
      paused: false,
    });
    await tasks.recordReach("a", gone);
    await tasks.recordReach("a", gone);
    expect(await tasks.getTask("a")).toMatchObject({ paused: false, unreachableInARow: 2 });
    expect(await tasks.recordReach("a", gone)).toEqual({ unreachableInARow: 3, paused: true });
    expect(await tasks.getTask("a")).toMatchObject({
      paused: true,
      pausedReason: "blocked by the user",
      unreachableInARow: 3,
    });
    expect(await tasks.dueTasks(1_000_000)).toEqual([]);
    // Paused already: counted, not paused again.
    expect(await tasks.recordReach("a", gone)).toEqual({ unreachableInARow: 4, paused: false });
    expect(await tasks.setPaused("a", false, 9_000)).toBe(true);
    const resumed = await tasks.getTask("a");
    expect(resumed).toMatchObject({ paused: false, unreachableInARow: 0, nextDueMs: 9_000 });
    expect(resumed?.pausedReason).toBeUndefined();
    // A user's pause keeps no reason.
    await tasks.setPaused("a", true, 9_000);
    expect((await tasks.getTask("a"))?.pausedReason).toBeUndefined();
    expect(await tasks.recordReach("gone", gone)).toBeUndefined();
  });

  it("is one set of tasks for every process of the profile", async () => {
    const { tasks } = await open();
    await tasks.addTask(task("a", "telegram:1"), { maxPerUser: 5, maxPerProfile: 5 });
    const second = await backend.open({ now: () => clockMs });
    expect((await second.tasks.listTasks()).map((t) => t.id)).toEqual(["a"]);
    expect(await second.tasks.deleteTask("a")).toBe(true);
    expect(await tasks.getTask("a")).toBeUndefined();
  });
});
