import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type ManualClock, manualClock } from "../../../../test-support/clock.js";
import { tempDirForTest } from "../../../../test-support/temp-dir.js";
import { silentLogger } from "../log.js";
import { SqliteStateStore } from "../state/store.js";
import type { NewTask, TaskRunOutcome, TaskStore, TaskTiming } from "../state/tasks.js";
import { type DueRun, type RunEnd, type SubmittedRun, TaskScheduler } from "./scheduler.js";
import { nextDueAfter } from "./timing.js";

const Minute = 60_000;
const Hour = 60 * Minute;
const stores: SqliteStateStore[] = [];

afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

async function openTasks(clock: ManualClock, dir?: string): Promise<TaskStore> {
  const home = dir ?? (await tempDirForTest("mg-tasks-"));
  const store = await SqliteStateStore.open(join(home, "state.db"), { now: clock.now });
  stores.push(store);
  return store.tasks;
}

function task(
  id: string,
  timing: TaskTiming,
  nowMs: number,
  extra: Partial<NewTask> = {},
): NewTask {
  const timezone = extra.timezone ?? "UTC";
  return {
    id,
    owner: "telegram:77",
    timing,
    timezone,
    text: "echo hi",
    chat: { platform: "telegram", chatId: "77", chatType: "dm" },
    catchUp: "once",
    nextDueMs: nextDueAfter(timing, timezone, nowMs, nowMs) ?? nowMs,
    ...extra,
  };
}

/** A submit that records each run and lets the test end it (or ends it at once). */
function submitter(endAtOnce = true) {
  const runs: DueRun[] = [];
  const enders: ((outcome: TaskRunOutcome) => void)[] = [];
  const stops: DueRun[] = [];
  const recorded = new Set<string>();
  const submit = async (run: DueRun): Promise<SubmittedRun> => {
    const key = `${run.task.id}:${run.dueMs}`;
    if (recorded.has(key)) return { fresh: false, stop: () => {} };
    recorded.add(key);
    runs.push(run);
    const finished = endAtOnce
      ? Promise.resolve<RunEnd>({ outcome: "done" })
      : new Promise<RunEnd>((resolve) => enders.push((outcome) => resolve({ outcome })));
    return {
      fresh: true,
      finished,
      stop: () => {
        stops.push(run);
        enders.at(-1)?.("failed");
      },
    };
  };
  return { runs, enders, stops, recorded, submit };
}

function scheduler(
  clock: ManualClock,
  store: TaskStore,
  submit: (run: DueRun) => Promise<SubmittedRun>,
  notices: string[] = [],
) {
  return new TaskScheduler({
    store,
    clock: { wallMs: clock.now, monoMs: clock.now },
    schedule: clock.schedule,
    submit,
    notify: async (_task, text) => {
      notices.push(text);
    },
    log: silentLogger(),
    runTimeoutMs: 10 * Minute,
  });
}

/** Moves the clock in `stepMs` steps up to `totalMs`, letting each tick finish. */
async function run(clock: ManualClock, tasks: TaskScheduler, totalMs: number, stepMs: number) {
  for (let moved = 0; moved < totalMs; moved += stepMs) {
    clock.advance(stepMs);
    await tasks.idle();
  }
}

describe("the scheduler on an injected clock", () => {
  it("pauses a task after three runs in a row found its chat gone; a run that reached it starts the count again", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    await store.addTask(task("gone", { kind: "every", everyMs: Hour }, clock.now()), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const blocked: RunEnd = {
      outcome: "failed",
      detail: "its chat is unreachable for the bot: 403 Forbidden: bot was blocked by the user",
      chat: "unreachable",
    };
    const ends: RunEnd[] = [blocked, blocked, { outcome: "done", chat: "reached" }];
    ends.push(blocked, blocked, blocked);
    const dueTimes: number[] = [];
    const tasks = scheduler(clock, store, async (run) => {
      dueTimes.push(run.dueMs);
      return { fresh: true, finished: Promise.resolve(ends.shift() ?? blocked), stop: () => {} };
    });
    tasks.start();
    await run(clock, tasks, 5 * Hour, Minute);
    expect(await store.getTask("gone")).toMatchObject({ paused: false, unreachableInARow: 2 });
    await run(clock, tasks, 5 * Hour, Minute);
    expect(dueTimes).toHaveLength(6);
    const paused = await store.getTask("gone");
    expect(paused).toMatchObject({ paused: true, unreachableInARow: 3 });
    expect(paused?.pausedReason).toBe(blocked.detail);
    const runs = await store.recentRuns("gone", 10);
    expect(runs.map((r) => r.outcome)).toEqual([
      "failed",
      "failed",
      "failed",
      "done",
      "failed",
      "failed",
    ]);
    expect(runs[0]?.detail).toBe(blocked.detail);
    // Resumed, the task runs again, its reason and count forgotten.
    await store.setPaused("gone", false, clock.now() + Hour);
    expect(await store.getTask("gone")).toMatchObject({ paused: false, unreachableInARow: 0 });
    expect((await store.getTask("gone"))?.pausedReason).toBeUndefined();
    tasks.poke();
    await run(clock, tasks, Hour, Minute);
    expect(dueTimes).toHaveLength(7);
    tasks.stop();
  });

  it("runs a task every minute 60 times in a simulated hour, on its anchor, never overlapping", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0, 0, 123));
    const store = await openTasks(clock);
    const created = clock.now();
    await store.addTask(task("every1m", { kind: "every", everyMs: Minute }, created), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const fake = submitter();
    const tasks = scheduler(clock, store, fake.submit);
    tasks.start();
    await tasks.idle();
    // Uneven steps: the scheduler's own timer decides when runs happen, not the test's stride.
    await run(clock, tasks, Hour, 7_000);
    await run(clock, tasks, 6_000, 1_000);
    expect(fake.runs).toHaveLength(60);
    expect(fake.runs.map((r) => r.dueMs)).toEqual(
      Array.from({ length: 60 }, (_, i) => created + (i + 1) * Minute),
    );
    const runs = await store.recentRuns("every1m", 100);
    expect(runs).toHaveLength(50);
    expect(new Set(runs.map((r) => r.outcome))).toEqual(new Set(["done"]));
    expect((await store.getTask("every1m"))?.nextDueMs).toBe(created + 61 * Minute);
    tasks.stop();
  });

  it("runs a 09:00 task once a day across the spring and autumn clock changes", async () => {
    for (const [start, days] of [
      [Date.UTC(2026, 2, 27, 0, 0), 4],
      [Date.UTC(2026, 9, 23, 0, 0), 4],
    ] as const) {
      const clock = manualClock(start);
      const store = await openTasks(clock);
      const timing: TaskTiming = { kind: "cron", pattern: "0 9 * * *" };
      await store.addTask(task("nine", timing, start, { timezone: "Europe/Berlin" }), {
        maxPerUser: 10,
        maxPerProfile: 10,
      });
      const fake = submitter();
      const tasks = scheduler(clock, store, fake.submit);
      tasks.start();
      await run(clock, tasks, days * 24 * Hour, 10 * Minute);
      const local = fake.runs.map((r) =>
        new Date(r.dueMs).toLocaleString("en-GB", { timeZone: "Europe/Berlin" }),
      );
      expect(local).toHaveLength(days);
      for (const shown of local) expect(shown).toMatch(/, 09:00:00$/);
      expect(new Set(local.map((shown) => shown.slice(0, 10))).size).toBe(days);
      tasks.stop();
    }
  });

  it("runs due times missed while down once with catchUp: once, and records them missed with skip", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const dir = await tempDirForTest("mg-tasks-");
    const store = await openTasks(clock, dir);
    const caps = { maxPerUser: 10, maxPerProfile: 10 };
    const hourly: TaskTiming = { kind: "every", everyMs: Hour };
    const created = clock.now();
    await store.addTask(task("once", hourly, created), caps);
    await store.addTask(task("skip", hourly, created, { catchUp: "skip" }), caps);
    // The gateway is down for five hours and a half.
    clock.advance(5.5 * Hour);
    const fake = submitter();
    const tasks = scheduler(clock, store, fake.submit);
    tasks.start();
    await tasks.idle();
    expect(fake.runs.map((r) => [r.task.id, r.dueMs])).toEqual([["once", created + Hour]]);
    expect((await store.recentRuns("skip", 10)).map((r) => r.outcome)).toEqual(["missed"]);
    for (const id of ["once", "skip"])
      expect((await store.getTask(id))?.nextDueMs).toBe(created + 6 * Hour);
    // After the start, the next due time runs as usual for both.
    await run(clock, tasks, Hour, 5 * Minute);
    expect(fake.runs.map((r) => r.task.id).sort()).toEqual(["once", "once", "skip"]);
    tasks.stop();
  });

  it("does not run again a due time the journal recorded before a crash; only moves on", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    const created = clock.now();
    await store.addTask(task("t", { kind: "every", everyMs: Hour }, created), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const fake = submitter();
    // The previous process recorded the run and died before moving the task on.
    fake.recorded.add(`t:${created + Hour}`);
    clock.advance(Hour + Minute);
    const tasks = scheduler(clock, store, fake.submit);
    tasks.start();
    await tasks.idle();
    expect(fake.runs).toEqual([]);
    expect((await store.getTask("t"))?.nextDueMs).toBe(created + 2 * Hour);
    tasks.stop();
  });

  it("skips due times while a run is going, tells the chat once, and stops a run at its timeout", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    const created = clock.now();
    await store.addTask(task("slow", { kind: "every", everyMs: 3 * Minute }, created), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const fake = submitter(false);
    const notices: string[] = [];
    const tasks = scheduler(clock, store, fake.submit, notices);
    tasks.start();
    await tasks.looked();
    // Three more due times pass while the first run is going (it times out at 10 minutes).
    for (let i = 0; i < 14; i++) {
      clock.advance(Minute);
      await tasks.looked();
    }
    await tasks.idle();
    expect(fake.runs).toHaveLength(1);
    expect(fake.stops).toHaveLength(1);
    const outcomes = (await store.recentRuns("slow", 10)).map((r) => r.outcome);
    expect(outcomes).toEqual(["overlap", "overlap", "overlap", "timeout"]);
    expect(notices).toHaveLength(1);
    expect(notices[0]).toMatch(/last 3 runs were skipped/);
    tasks.stop();
  });
});

describe("a run recovery ran again after a restart", () => {
  it("counts as the task's run going: due times meanwhile are overlaps, Run now is refused", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    const created = clock.now();
    await store.addTask(task("rerun", { kind: "every", everyMs: 5 * Minute }, created), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const fake = submitter();
    const tasks = scheduler(clock, store, fake.submit);
    let endRecovered = (_outcome: TaskRunOutcome) => {};
    tasks.adopt("rerun", created - Minute, {
      fresh: true,
      finished: new Promise<RunEnd>((resolve) => {
        endRecovered = (outcome) => resolve({ outcome });
      }),
      stop: () => {},
    });
    tasks.start();
    await tasks.looked();
    clock.advance(5 * Minute);
    await tasks.looked();
    expect(tasks.isRunning("rerun")).toBe(true);
    expect(await tasks.runNow((await store.getTask("rerun"))!)).toBe("running");
    expect(fake.runs).toEqual([]);
    expect((await store.recentRuns("rerun", 5)).map((r) => r.outcome)).toEqual(["overlap"]);
    endRecovered("done");
    await tasks.idle();
    expect(tasks.isRunning("rerun")).toBe(false);
    expect((await store.recentRuns("rerun", 5)).map((r) => [r.dueMs, r.outcome])).toEqual([
      [created + 5 * Minute, "overlap"],
      [created - Minute, "done"],
    ]);
    clock.advance(5 * Minute);
    await tasks.idle();
    expect(fake.runs.map((r) => r.dueMs)).toEqual([created + 10 * Minute]);
    tasks.stop();
  });

  it("is stopped at the run timeout, counted from its turn's start", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    await store.addTask(task("hang", { kind: "every", everyMs: Hour }, clock.now()), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const tasks = scheduler(clock, store, submitter().submit);
    let end = (_outcome: TaskRunOutcome) => {};
    const stops: Error[] = [];
    tasks.adopt("hang", clock.now() - Hour, {
      fresh: true,
      finished: new Promise<RunEnd>((resolve) => {
        end = (outcome) => resolve({ outcome });
      }),
      started: Promise.resolve(),
      stop: (reason) => {
        stops.push(reason);
        end("failed");
      },
    });
    tasks.start();
    await tasks.looked();
    clock.advance(10 * Minute - 1);
    expect(stops).toEqual([]);
    clock.advance(1);
    await tasks.idle();
    expect(stops.map((reason) => reason.name)).toEqual(["TaskRunTimeoutError"]);
    expect((await store.recentRuns("hang", 1)).map((r) => r.outcome)).toEqual(["timeout"]);
    tasks.stop();
  });
});

describe("the run timeout", () => {
  it("counts from the start of the run's turn, not its wait behind the owner's other turns", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    const created = clock.now();
    await store.addTask(task("queued", { kind: "every", everyMs: Hour }, created), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const fake = submitter(false);
    let startTurn = () => {};
    const started = new Promise<void>((resolve) => {
      startTurn = resolve;
    });
    const tasks = scheduler(clock, store, async (due) => ({
      ...(await fake.submit(due)),
      started,
    }));
    tasks.start();
    await tasks.looked();
    clock.advance(Hour);
    await tasks.looked();
    expect(fake.runs).toHaveLength(1);
    // 25 minutes in the owner's queue: more than the 10-minute timeout, and nothing is stopped.
    for (let i = 0; i < 25; i++) {
      clock.advance(Minute);
      await tasks.looked();
    }
    expect(fake.stops).toEqual([]);
    startTurn();
    await started;
    clock.advance(10 * Minute - 1);
    await tasks.looked();
    expect(fake.stops).toEqual([]);
    clock.advance(1);
    await tasks.idle();
    expect(fake.stops).toHaveLength(1);
    expect((await store.recentRuns("queued", 1)).map((r) => r.outcome)).toEqual(["timeout"]);
    tasks.stop();
  });

  it("is never armed for a run that ended before its turn started", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    await store.addTask(task("refused", { kind: "every", everyMs: Hour }, clock.now()), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const tasks = scheduler(clock, store, async () => ({
      fresh: true,
      finished: Promise.resolve<RunEnd>({ outcome: "refused" }),
      started: new Promise<void>(() => {}),
      stop: () => {},
    }));
    tasks.start();
    await tasks.looked();
    clock.advance(Hour);
    await tasks.idle();
    // Only the scheduler's own look-again timer is pending; no timeout.
    expect(clock.pending()).toEqual([60_000]);
    expect((await store.recentRuns("refused", 1)).map((r) => r.outcome)).toEqual(["refused"]);
    tasks.stop();
  });
});

describe("a due run the journal cannot record", () => {
  it("is not run, keeps its due time, and is tried again a maxWaitMs later, not at once", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    const created = clock.now();
    await store.addTask(task("t", { kind: "every", everyMs: Hour }, created), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    let attempts = 0;
    let full = true;
    const fake = submitter();
    const tasks = scheduler(clock, store, async (run) => {
      attempts++;
      if (full) throw new Error("disk full");
      return fake.submit(run);
    });
    tasks.start();
    await tasks.looked();
    clock.advance(Hour);
    await tasks.looked();
    expect(attempts).toBe(1);
    expect(clock.pending()).toEqual([60_000]);
    expect((await store.getTask("t"))?.nextDueMs).toBe(created + Hour);
    full = false;
    clock.advance(Minute);
    await tasks.idle();
    expect(attempts).toBe(2);
    expect(fake.runs.map((r) => r.dueMs)).toEqual([created + Hour]);
    tasks.stop();
  });
});

describe("Run now", () => {
  it("pressed twice at once starts one run; the second press is told it is running", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    await store.addTask(task("twice", { kind: "every", everyMs: Hour }, clock.now()), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const fake = submitter(false);
    const tasks = scheduler(clock, store, fake.submit);
    tasks.start();
    await tasks.looked();
    const stored = (await store.getTask("twice"))!;
    // A double click: the second press comes while the first is still being handed on.
    const first = tasks.runNow(stored);
    clock.advance(1);
    const second = tasks.runNow(stored);
    expect([await first, await second]).toEqual(["started", "running"]);
    expect(fake.runs).toHaveLength(1);
    fake.enders[0]?.("done");
    await tasks.idle();
    tasks.stop();
  });

  it("while a due run is being handed on is refused, not run beside it", async () => {
    const clock = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    const store = await openTasks(clock);
    const created = clock.now();
    await store.addTask(task("due", { kind: "every", everyMs: Hour }, created), {
      maxPerUser: 10,
      maxPerProfile: 10,
    });
    const fake = submitter(false);
    let entered = () => {};
    const inJournal = new Promise<void>((resolve) => {
      entered = resolve;
    });
    let letThrough = () => {};
    const gate = new Promise<void>((resolve) => {
      letThrough = resolve;
    });
    const tasks = scheduler(clock, store, async (run) => {
      if (run.dueMs === created + Hour) {
        entered();
        await gate;
      }
      return fake.submit(run);
    });
    tasks.start();
    await tasks.looked();
    clock.advance(Hour);
    // The press comes while the scheduler's own due run is on its way into the journal.
    await inJournal;
    clock.advance(1);
    const pressed = tasks.runNow((await store.getTask("due"))!);
    letThrough();
    await tasks.looked();
    expect(await pressed).toBe("running");
    expect(fake.runs.map((r) => r.dueMs)).toEqual([created + Hour]);
    fake.enders[0]?.("done");
    await tasks.idle();
    tasks.stop();
  });
});

describe("a wall clock that steps back", () => {
  it("moves the next runs back to the timetable instead of waiting for the wrong time", async () => {
    const timers = manualClock(Date.UTC(2026, 0, 5, 10, 0));
    // The wall clock is the timers' clock plus a step; timers run on elapsed time, as real ones do.
    let stepMs = 0;
    const clock: ManualClock = { ...timers, now: () => timers.now() + stepMs };
    const store = await openTasks(clock);
    const created = clock.now();
    const caps = { maxPerUser: 10, maxPerProfile: 10 };
    await store.addTask(task("hourly", { kind: "every", everyMs: Hour }, created), caps);
    await store.addTask(task("cron", { kind: "cron", pattern: "30 * * * *" }, created), caps);
    const fake = submitter();
    const tasks = scheduler(clock, store, fake.submit);
    tasks.start();
    await tasks.idle();
    // A bad time source steps the clock ten days ahead: the tasks run once and move on from then.
    stepMs = 10 * 24 * Hour;
    await run(clock, tasks, Minute, Minute);
    expect(fake.runs).toHaveLength(2);
    // A task made while the clock was wrong is anchored in that future.
    await store.addTask(task("made-ahead", { kind: "every", everyMs: Hour }, clock.now()), caps);
    fake.runs.length = 0;
    // NTP steps it back.
    stepMs = 0;
    await run(clock, tasks, 2 * Hour, Minute);
    const runsOf = (id: string) =>
      fake.runs.filter((r) => r.task.id === id).map((r) => r.dueMs - created);
    // The due times the wrong clock ran early (10:30, 11:00) are not run twice: the journal
    // knows their receipts. The next ones come on time, not ten days later.
    expect(runsOf("hourly")).toEqual([2 * Hour]);
    expect(runsOf("cron")).toEqual([90 * Minute]);
    expect(runsOf("made-ahead")).toHaveLength(2);
    expect((await store.getTask("hourly"))?.nextDueMs).toBe(created + 3 * Hour);
    tasks.stop();
  });
});
