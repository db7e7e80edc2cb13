/**
 * Scheduled tasks as the state store keeps them (docs/schedules.md). The types only: the SQL is
 * in tasks-database.ts, and {@link TaskStore} is what a second backend implements.
 */

/** When a task is due: every interval (anchored at its creation), once, or by a cron pattern. */
export type TaskTiming =
  | { readonly kind: "every"; readonly everyMs: number }
  | { readonly kind: "at"; readonly atMs: number }
  | { readonly kind: "cron"; readonly pattern: string };

/** The chat a task's runs are answered in (where it was made, or the config's `chat`). */
export interface TaskChat {
  readonly platform: "telegram" | "discord" | "console";
  readonly chatId: string;
  readonly chatType: "dm" | "group" | "channel";
  readonly threadId?: string | undefined;
  readonly chatName?: string | undefined;
}

/** What a due time missed while the gateway was down does: run once after the start, or not. */
export type CatchUp = "once" | "skip";

/** A task as created, before the store gives it its times. */
export interface NewTask {
  /** Random, URL-safe; the buttons carry it. */
  readonly id: string;
  /**
   * Who runs it: `<platform>:<id>` for a task made in a chat, `operator` for one of the config's
   * `schedules.tasks` (their `name` tells them apart).
   */
  readonly owner: string;
  readonly ownerName?: string | undefined;
  /** The config task's name; absent for a chat task. */
  readonly name?: string | undefined;
  readonly timing: TaskTiming;
  /** IANA time zone the cron pattern and `/at` times are read in. */
  readonly timezone: string;
  /** The prompt or command each run sends, as if the owner typed it. */
  readonly text: string;
  readonly chat: TaskChat;
  readonly catchUp: CatchUp;
  /** The first due time (epoch ms). */
  readonly nextDueMs: number;
}

/** A stored task. */
export interface TaskRecord extends NewTask {
  readonly paused: boolean;
  /** `false` once a one-time task ran (it stays listed with its last run until deleted). */
  readonly active: boolean;
  readonly createdAtMs: number;
  /** Due times skipped in a row because the run before was still going. */
  readonly overlapsInARow: number;
  /** Runs in a row whose answer found the chat gone for the bot (see {@link ChatReach}). */
  readonly unreachableInARow: number;
  /** Why the gateway paused it (its chat is unreachable); absent when paused by a user. */
  readonly pausedReason?: string | undefined;
  readonly lastRun?: TaskRun | undefined;
}

/**
 * How a run went: `running` (handed to the pipeline), `done` (answered), `failed`, `timeout`
 * (stopped after `runTimeoutSeconds`), `refused` (its owner may no longer use the bot),
 * `overlap` (skipped: the run before was still going), `missed` (due while the gateway was down,
 * `catchUp: skip`), `interrupted` (cut off by a restart).
 */
export type TaskRunOutcome =
  | "running"
  | "done"
  | "failed"
  | "timeout"
  | "refused"
  | "overlap"
  | "missed"
  | "interrupted";

/** One due time of a task and what came of it. */
export interface TaskRun {
  readonly taskId: string;
  readonly dueMs: number;
  readonly outcome: TaskRunOutcome;
  readonly atMs: number;
  readonly detail?: string | undefined;
}

/**
 * What a run's answers found of its task's chat, for {@link TaskStore.recordReach}: one was
 * delivered (`reached`), or the platform said the chat is gone for the bot (`reason`, its
 * answer), which pauses the task after `pauseAfter` such runs in a row.
 */
export type ChatReach =
  | { readonly reached: true }
  | { readonly reached: false; readonly reason: string; readonly pauseAfter: number };

/** What {@link TaskStore.recordReach} left: the count, and whether it paused the task now. */
export interface ReachCount {
  readonly unreachableInARow: number;
  readonly paused: boolean;
}

/** The caps {@link TaskStore.addTask} checks, atomically with the insert. */
export interface TaskCaps {
  readonly maxPerUser: number;
  readonly maxPerProfile: number;
}

/**
 * What {@link TaskStore.addTask} did. A task of the same id, owner and text already there is
 * `added` as it is (the same command made twice: its id is derived from the command's receipt).
 */
export type AddTaskResult =
  | { readonly status: "added"; readonly task: TaskRecord }
  | { readonly status: "user_full" | "profile_full"; readonly count: number };

/** Whether `stored` is the task `task` would make: the same command made before. */
export function sameTask(stored: TaskRecord, task: NewTask): boolean {
  return stored.owner === task.owner && stored.text === task.text;
}

/** How the scheduler moves a task past a due time. */
export interface TaskAdvance {
  readonly id: string;
  /** The due time being handled: the move happens only if the task is still at it. */
  readonly fromDueMs: number;
  /** The next one; `undefined`: no more (a one-time task). */
  readonly nextDueMs: number | undefined;
  /**
   * The run row written with the move; absent for a move that passes no run (the wall clock
   * stepped back, and the next due time is moved back to the timetable).
   */
  readonly run?: TaskRun | undefined;
}

/**
 * The scheduled tasks of one profile, durable (docs/schedules.md). Every method is one atomic
 * step; the SQLite state store implements it (state/store.ts), and a second backend implements
 * the same operations.
 */
export interface TaskStore {
  /**
   * Stores a chat task unless its owner (or the profile) has `caps` active tasks already. The
   * owner's done tasks beyond the newest `caps.maxPerUser` are dropped first.
   */
  addTask(task: NewTask, caps: TaskCaps): Promise<AddTaskResult>;
  getTask(id: string): Promise<TaskRecord | undefined>;
  /** The tasks, oldest first; with `owner`, only theirs. */
  listTasks(owner?: string): Promise<TaskRecord[]>;
  /** Active, unpaused tasks due at or before `nowMs`, earliest first. */
  dueTasks(nowMs: number): Promise<TaskRecord[]>;
  /** The earliest due time of an active, unpaused task. */
  nextDueMs(): Promise<number | undefined>;
  /**
   * Moves a task past `fromDueMs` and records `run`, in one transaction; false (nothing
   * written) when the task is gone or already moved (another process handled it).
   */
  advanceTask(advance: TaskAdvance, overlapsInARow: number): Promise<boolean>;
  /** Writes (or rewrites) the run of a due time: a run that ended, or was cut off. */
  recordRun(run: TaskRun): Promise<void>;
  /** The newest runs of a task, newest first. */
  recentRuns(taskId: string, limit: number): Promise<TaskRun[]>;
  /**
   * Counts a run whose answer could not reach the task's chat, or resets the count for one
   * that did (one atomic step). At `pauseAfter` in a row an active task is paused with
   * `reason` kept. `undefined`: no such task.
   */
  recordReach(id: string, reach: ChatReach): Promise<ReachCount | undefined>;
  /**
   * Pauses or resumes a task; resuming sets its next due time and forgets why it was paused
   * and the runs that found its chat gone. False: no such task.
   */
  setPaused(id: string, paused: boolean, nextDueMs: number): Promise<boolean>;
  /** Deletes a task and its runs. False: no such task. */
  deleteTask(id: string): Promise<boolean>;
  /**
   * Makes the config's tasks (owner `operator`) exactly `tasks`: new names are added, changed
   * ones rewritten (keeping their next due time when the timing did not change), others deleted.
   */
  syncOperatorTasks(tasks: readonly NewTask[]): Promise<void>;
  /** The time zone `user` (`<platform>:<id>`) chose with `/tz`; `undefined`: none chosen. */
  userTimezone(user: string): Promise<string | undefined>;
  /** Keeps `timezone` as `user`'s own (`/tz <zone>`); `undefined` forgets it (`/tz reset`). */
  setUserTimezone(user: string, timezone: string | undefined): Promise<void>;
}
