import type { Clock, Schedule } from "@mediagate/io";
import { Defaults } from "../defaults.js";
import type { Logger } from "../log.js";
import type { TaskRecord, TaskRun, TaskRunOutcome, TaskStore } from "../state/tasks.js";
import { TaskRunTimeoutError } from "./errors.js";
import { nextDueAfter } from "./timing.js";

/** One due time of a task, handed to {@link SubmitRun}. */
export interface DueRun {
  readonly task: TaskRecord;
  /** The due time: with the task's id, the run's idempotency key (`task:<id>:<dueMs>`). */
  readonly dueMs: number;
}

/** How a run ended, as {@link SubmittedRun.finished} tells it. */
export interface RunEnd {
  readonly outcome: TaskRunOutcome;
  /** Why, when the outcome alone does not say (the platform's answer for a chat gone). */
  readonly detail?: string | undefined;
  /**
   * What its answers found of its chat: one was delivered (`reached`), or the platform said
   * the chat is gone for the bot (`unreachable`, why in `detail`). Absent: neither is known
   * (it answered nothing, or its answer waits for a later attempt).
   */
  readonly chat?: "reached" | "unreachable" | undefined;
  /**
   * The run was handed to the replica holding its session (docs/cluster.md): that replica
   * follows it and records how it ended; this one records nothing (its record says
   * `running`, as it does while the run goes on).
   */
  readonly handedOn?: true | undefined;
}

/** A run handed on: recorded in the journal before {@link SubmitRun} resolved. */
export interface SubmittedRun {
  /** False when the journal held this due time already (a restart found it there): not run again. */
  readonly fresh: boolean;
  /** How the run ended, once it has (never rejects). Absent when not `fresh`. */
  readonly finished?: Promise<RunEnd> | undefined;
  /**
   * Resolves when the run's turn starts, out of its owner's session queue: the run timeout
   * counts from then. Absent: it counts from the hand-over. Never resolving is fine (a run
   * refused before any turn ends without one).
   */
  readonly started?: Promise<void> | undefined;
  /** Stops the run (its timeout), with `reason` as the turn's abort reason. */
  stop(reason: Error): void;
}

/**
 * Records a due run in the journal, as a typed message is, and hands it to the pipeline; the
 * gateway implements it (gateway/scheduled-runs.ts). Rejects when the journal cannot be written:
 * the due time stays, and is tried again.
 */
export type SubmitRun = (run: DueRun) => Promise<SubmittedRun>;

/** Options of {@link TaskScheduler}. */
export interface TaskSchedulerOptions {
  readonly store: TaskStore;
  readonly clock: Clock;
  /** Timers (tests fire them by hand). Default: unref'd `setTimeout`. */
  readonly schedule: Schedule;
  readonly submit: SubmitRun;
  /** Tells a task's chat something (its runs keep overlapping). Never rejects. */
  readonly notify: (task: TaskRecord, text: string) => Promise<void>;
  readonly log: Logger;
  /** Default `Defaults.schedules.runTimeoutSeconds`. */
  readonly runTimeoutMs?: number;
  /** Default `Defaults.schedules.overlapNoticeAfter`. */
  readonly overlapNoticeAfter?: number;
  /** Default `Defaults.schedules.pauseAfterUnreachable`. */
  readonly pauseAfterUnreachable?: number;
  /** Default `Defaults.schedules.maxWaitMs`. */
  readonly maxWaitMs?: number;
}

/** What {@link TaskScheduler.runNow} did. */
export type RunNowResult = "started" | "running" | "recorded_before";

/**
 * Runs one profile's tasks when they are due (docs/schedules.md). The due times live in the
 * {@link TaskStore}; the scheduler keeps one timer, for the earliest, and looks again at least
 * every `maxWaitMs`. A due run is recorded in the journal under `task:<id>:<due ms>` before the
 * task moves on to its next due time: a crash between the two finds the run in the journal (it
 * was recovered from there, not run again) and only moves the task on. Due times that passed
 * while the gateway was down run once (`catchUp: once`, however many were missed) or are
 * recorded as missed (`skip`). A task's runs never overlap: a due time that finds the run
 * before still going is recorded as skipped, and the chat is told when that keeps happening. A
 * task whose runs keep finding its chat gone for the bot is paused.
 */
export class TaskScheduler {
  readonly #options: TaskSchedulerOptions;
  readonly #runTimeoutMs: number;
  readonly #overlapNoticeAfter: number;
  readonly #pauseAfterUnreachable: number;
  readonly #maxWaitMs: number;
  /** Runs going now, by task id. */
  readonly #running = new Map<string, Promise<void>>();
  #startedAtMs = 0;
  #cancelTimer: (() => void) | undefined;
  #ticking: Promise<void> | undefined;
  #again = false;
  #stopped = true;

  constructor(options: TaskSchedulerOptions) {
    this.#options = options;
    this.#runTimeoutMs = options.runTimeoutMs ?? Defaults.schedules.runTimeoutSeconds * 1000;
    this.#overlapNoticeAfter = options.overlapNoticeAfter ?? Defaults.schedules.overlapNoticeAfter;
    this.#pauseAfterUnreachable =
      options.pauseAfterUnreachable ?? Defaults.schedules.pauseAfterUnreachable;
    this.#maxWaitMs = options.maxWaitMs ?? Defaults.schedules.maxWaitMs;
  }

  /** Starts: due times before now were missed while the gateway was down. */
  start(): void {
    this.#stopped = false;
    this.#startedAtMs = this.#options.clock.wallMs();
    this.poke();
  }

  /** Stops arming timers; runs going on finish on their own (the gateway's drain). */
  stop(): void {
    this.#stopped = true;
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
  }

  /** Looks at the due times now (a task was added, resumed or changed). */
  poke(): void {
    if (this.#stopped) return;
    if (this.#ticking !== undefined) {
      this.#again = true;
      return;
    }
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    this.#ticking = this.#tick().finally(() => {
      this.#ticking = undefined;
      if (this.#again) {
        this.#again = false;
        this.poke();
      }
    });
  }

  /**
   * Follows a run this scheduler did not start, as its own: a run the previous process left,
   * run again by recovery (gateway/scheduled-runs.ts). Until it ends, due times of its task
   * are overlaps and "Run now" is refused; it is stopped at the run timeout (counted from its
   * turn's start, or from now if that was before); how it ended is recorded. Call it before
   * {@link start}.
   */
  adopt(taskId: string, dueMs: number, run: SubmittedRun): void {
    this.#follow(taskId, dueMs, run, "taken over after a restart");
  }

  /** Whether a run of `taskId` is going. */
  isRunning(taskId: string): boolean {
    return this.#running.has(taskId);
  }

  /** Resolves once no look at the due times is going (runs handed on may still be). */
  async looked(): Promise<void> {
    while (this.#ticking !== undefined) await this.#ticking;
  }

  /** Resolves once no tick is going and every run handed on so far has ended (tests). */
  async idle(): Promise<void> {
    while (this.#ticking !== undefined || this.#running.size > 0) {
      await Promise.allSettled([this.#ticking, ...this.#running.values()]);
    }
  }

  /**
   * "Run now": a run due now, outside the timetable (the next due time stays). Refused while
   * a run of the task is going.
   */
  async runNow(task: TaskRecord): Promise<RunNowResult> {
    if (this.#running.has(task.id)) return "running";
    const release = this.#hold(task.id);
    try {
      const dueMs = this.#options.clock.wallMs();
      const submitted = await this.#options.submit({ task, dueMs });
      if (!submitted.fresh) return "recorded_before";
      await this.#options.store.recordRun(this.#run(task.id, dueMs, "running", "run now"));
      this.#follow(task.id, dueMs, submitted);
      return "started";
    } finally {
      release();
    }
  }

  /**
   * Counts `taskId`'s run as going while it is handed on (the journal, the store), before
   * {@link #follow} takes over: a press of "Run now" or a due time meanwhile finds it going
   * instead of starting a second run beside it. The returned function ends the hold unless
   * {@link #follow} replaced it.
   */
  #hold(taskId: string): () => void {
    let handedOn = () => {};
    const holding = new Promise<void>((resolve) => {
      handedOn = resolve;
    });
    this.#running.set(taskId, holding);
    return () => {
      if (this.#running.get(taskId) === holding) this.#running.delete(taskId);
      handedOn();
    };
  }

  async #tick(): Promise<void> {
    const { store, clock, log } = this.#options;
    let failed = false;
    try {
      const nowMs = clock.wallMs();
      for (const task of await store.dueTasks(nowMs)) {
        if (this.#stopped) return;
        try {
          await this.#fire(task, nowMs);
        } catch (error) {
          // The due time stays: the next look, a `maxWaitMs` later, tries it again.
          failed = true;
          log.error({ err: error, taskId: task.id }, "scheduled run could not be started");
        }
      }
      await this.#realign(nowMs);
    } catch (error) {
      failed = true;
      log.error({ err: error }, "could not read the scheduled tasks");
    }
    await this.#arm(failed);
  }

  /**
   * Moves back the next due time of each task that waits past its timetable: the wall clock
   * stepped back after the task was moved on at a wrong time (a bad time source, an operator's
   * mistake), and it would otherwise wait until that wrong time comes round again.
   */
  async #realign(nowMs: number): Promise<void> {
    const { store, log } = this.#options;
    for (const task of await store.listTasks()) {
      if (this.#stopped) return;
      if (!task.active || task.paused || task.nextDueMs <= nowMs) continue;
      try {
        const next = nextDueAfter(task.timing, task.timezone, task.createdAtMs, nowMs);
        if (next === undefined || next >= task.nextDueMs) continue;
        const advance = { id: task.id, fromDueMs: task.nextDueMs, nextDueMs: next };
        if (await store.advanceTask(advance, task.overlapsInARow)) {
          log.warn(
            { taskId: task.id, fromDueMs: task.nextDueMs, nextDueMs: next },
            "the wall clock stepped back: the task's next run moved back to its timetable",
          );
        }
      } catch (error) {
        log.error({ err: error, taskId: task.id }, "could not check a task's next due time");
      }
    }
  }

  /** Arms the timer for the next due time; after a failure, not before `maxWaitMs`. */
  async #arm(failed: boolean): Promise<void> {
    if (this.#stopped) return;
    const { store, clock, schedule, log } = this.#options;
    let waitMs = this.#maxWaitMs;
    try {
      const next = await store.nextDueMs();
      if (next !== undefined && !failed)
        waitMs = Math.min(waitMs, Math.max(0, next - clock.wallMs()));
    } catch (error) {
      log.error({ err: error }, "could not read the next due time");
    }
    if (this.#stopped) return;
    this.#cancelTimer = schedule(() => this.poke(), waitMs);
  }

  async #fire(task: TaskRecord, nowMs: number): Promise<void> {
    const { store, log } = this.#options;
    const dueMs = task.nextDueMs;
    const next = nextDueAfter(task.timing, task.timezone, task.createdAtMs, nowMs);
    const move = (run: TaskRun, overlaps: number) =>
      store.advanceTask({ id: task.id, fromDueMs: dueMs, nextDueMs: next, run }, overlaps);
    const fields = { taskId: task.id, owner: task.owner, dueMs };
    if (dueMs < this.#startedAtMs && task.catchUp === "skip") {
      await move(this.#run(task.id, dueMs, "missed", "due while the gateway was down"), 0);
      log.info(fields, "scheduled run missed while the gateway was down; skipped (catchUp: skip)");
      return;
    }
    if (this.#running.has(task.id)) {
      const overlaps = task.overlapsInARow + 1;
      await move(this.#run(task.id, dueMs, "overlap", "the run before was still going"), overlaps);
      log.warn({ ...fields, overlaps }, "scheduled run skipped: the run before is still going");
      if (overlaps === this.#overlapNoticeAfter) {
        await this.#options.notify(
          task,
          `⚠️ Task ${task.id}: its last ${overlaps} runs were skipped because the run before was still going. Give it a longer interval, or make it quicker; /tasks lists it.`,
        );
      }
      return;
    }
    const release = this.#hold(task.id);
    try {
      // Journal first, then the move: a crash between them finds the run recorded.
      const submitted = await this.#options.submit({ task, dueMs });
      if (!submitted.fresh) {
        log.info(fields, "scheduled run was recorded before the restart; not run again");
        await move(this.#run(task.id, dueMs, "running", "taken over from the journal"), 0);
        return;
      }
      await move(this.#run(task.id, dueMs, "running"), 0);
      log.info({ ...fields, catchUp: dueMs < this.#startedAtMs }, "scheduled run started");
      this.#follow(task.id, dueMs, submitted);
    } finally {
      release();
    }
  }

  /**
   * Keeps the run counted until it ends, stops it at its timeout, records how it ended and
   * what it found of its chat ({@link #countReach}). The timeout counts from the start of the
   * run's turn: while the run waits behind its owner's other turns it is not running, and
   * stopping "it" then would stop the owner's own turn.
   */
  #follow(taskId: string, dueMs: number, submitted: SubmittedRun, detail?: string): void {
    const { store, clock, schedule, log } = this.#options;
    let timedOut = false;
    let ended = false;
    let cancelTimeout = () => {};
    const armTimeout = () => {
      if (ended) return;
      cancelTimeout = schedule(() => {
        timedOut = true;
        log.warn({ taskId, dueMs }, "scheduled run timed out; stopping it");
        submitted.stop(new TaskRunTimeoutError(taskId, this.#runTimeoutMs));
      }, this.#runTimeoutMs);
    };
    if (submitted.started === undefined) armTimeout();
    else void submitted.started.then(armTimeout);
    const following = (submitted.finished ?? Promise.resolve<RunEnd>({ outcome: "done" }))
      .then(async (end) => {
        if (end.handedOn === true) {
          log.info({ taskId, dueMs }, "scheduled run handed to the replica holding its session");
          return;
        }
        const outcome: TaskRunOutcome = timedOut ? "timeout" : end.outcome;
        const why = end.detail ?? detail;
        const run = { ...this.#run(taskId, dueMs, outcome, why), atMs: clock.wallMs() };
        await store.recordRun(run);
        // Logged once recorded: the line means the task's record of runs shows the outcome.
        log.info({ taskId, dueMs, outcome }, "scheduled run ended");
        await this.#countReach(taskId, end);
      })
      .catch((error: unknown) => log.error({ err: error, taskId }, "run not recorded"))
      .finally(() => {
        ended = true;
        cancelTimeout();
        this.#running.delete(taskId);
      });
    this.#running.set(taskId, following);
  }

  /**
   * Counts a run whose answer found its chat gone for the bot, and pauses its task, as /pause
   * does, at `pauseAfterUnreachable` in a row, with the reason kept for /tasks; a run that
   * reached the chat starts the count again.
   */
  async #countReach(taskId: string, end: RunEnd): Promise<void> {
    if (end.chat === undefined) return;
    if (end.chat === "reached") {
      await this.#options.store.recordReach(taskId, { reached: true });
      return;
    }
    const reason = end.detail ?? "its chat is unreachable for the bot";
    const count = await this.#options.store.recordReach(taskId, {
      reached: false,
      reason,
      pauseAfter: this.#pauseAfterUnreachable,
    });
    if (count?.paused !== true) return;
    this.#options.log.warn(
      { taskId, unreachableInARow: count.unreachableInARow, reason },
      "task paused: its runs could not reach its chat",
    );
  }

  #run(taskId: string, dueMs: number, outcome: TaskRunOutcome, detail?: string): TaskRun {
    return {
      taskId,
      dueMs,
      outcome,
      atMs: this.#options.clock.wallMs(),
      ...(detail === undefined ? {} : { detail }),
    };
  }
}
