import { createHash, randomBytes } from "node:crypto";
import ms from "ms";
import type { ChoiceButton } from "../channels/types.js";
import { formatChoiceData } from "../choices/choice-data.js";
import type { ProfileConfig } from "../config/types.js";
import type { Logger } from "../log.js";
import type { TaskChat, TaskRecord, TaskStore, TaskTiming } from "../state/tasks.js";
import type { TaskAction, TaskCommand } from "./parse.js";
import { isTaskCommand } from "./parse.js";
import type { TaskScheduler } from "./scheduler.js";
import {
  checkCron,
  describeTiming,
  formatLocal,
  nextDueAfter,
  parseAt,
  parseEvery,
  shortestGapMs,
  TimingError,
} from "./timing.js";
import { userZone } from "./user-timezone.js";

/** The button kind of task buttons in choice data (`tk:<task id>:<action>`). */
export const TaskChoiceKind = "tk";

/** Discord's limit of rows: tasks past the fifth are listed without buttons. */
const MaxButtonRows = 5;

/** Who acts, where, and on which profile's tasks. */
export interface TaskScope {
  readonly profile: ProfileConfig;
  readonly tasks: TaskStore;
  readonly scheduler: TaskScheduler | undefined;
  /** `<platform>:<id>`. */
  readonly user: string;
  readonly userName?: string | undefined;
  /**
   * The command message's `<platform>:<receiptId>`: a task it makes has an id derived from it,
   * so the command run again after a crash (docs/durability.md, "Command answers") finds the
   * task it made, not a second one. Absent: a random id.
   */
  readonly receiptId?: string | undefined;
  readonly admin: boolean;
  readonly chat: TaskChat;
  readonly nowMs: number;
  readonly log: Logger;
}

/**
 * A short task id (48 bits; the presser's rights are checked on every press, so guessing one
 * gives nothing): derived from the profile and the command's receipt when there is one, so that
 * the same command made twice makes one task; otherwise random.
 */
function newTaskId(profile: string, receiptId: string | undefined): string {
  if (receiptId === undefined) return randomBytes(6).toString("base64url");
  return createHash("sha256")
    .update(`task\0${profile}\0${receiptId}`)
    .digest()
    .subarray(0, 6)
    .toString("base64url");
}

function readTiming(
  command: Extract<TaskCommand, { name: "every" | "at" | "cron" }>,
  zone: string,
  nowMs: number,
): TaskTiming {
  switch (command.name) {
    case "every":
      return { kind: "every", everyMs: parseEvery(command.interval) };
    case "at":
      return { kind: "at", atMs: parseAt(command.time, zone, nowMs) };
    case "cron":
      checkCron(command.pattern, zone);
      return { kind: "cron", pattern: command.pattern };
  }
}

/** `/every`, `/at`, `/cron`: makes a task of the sender's, answered in this chat. */
export async function createTask(
  scope: TaskScope,
  command: Extract<TaskCommand, { name: "every" | "at" | "cron" }>,
): Promise<string> {
  const { profile, nowMs } = scope;
  const settings = profile.schedules;
  if (isTaskCommand(command.text)) {
    return "⛔ A task's text cannot be a task command; nothing was made.";
  }
  const { zone } = await userZone(profile, scope.tasks, scope.user);
  let timing: TaskTiming;
  try {
    timing = readTiming(command, zone, nowMs);
  } catch (error) {
    if (error instanceof TimingError) return `⛔ ${error.message}. Nothing was made.`;
    throw error;
  }
  const gap = shortestGapMs(timing, zone, nowMs);
  const minMs = settings.minIntervalSeconds * 1000;
  if (gap !== undefined && gap < minMs) {
    return `⛔ Tasks here may run at most every ${ms(minMs, { long: true })}; this one would run every ${ms(gap, { long: true })}. Choose a longer interval; nothing was made.`;
  }
  const nextDueMs = nextDueAfter(timing, zone, nowMs, nowMs);
  if (nextDueMs === undefined) return "⛔ That time has passed; nothing was made.";
  const added = await scope.tasks.addTask(
    {
      id: newTaskId(profile.name, scope.receiptId),
      owner: scope.user,
      ownerName: scope.userName,
      timing,
      timezone: zone,
      text: command.text,
      chat: scope.chat,
      catchUp: settings.catchUp,
      nextDueMs,
    },
    { maxPerUser: settings.maxPerUser, maxPerProfile: settings.maxPerProfile },
  );
  if (added.status !== "added") {
    return added.status === "user_full"
      ? `⛔ You have ${added.count} tasks already, the most one user may have here. Delete one (/tasks) first; nothing was made.`
      : `⛔ This bot has ${added.count} tasks already, the most it keeps. Ask an admin to delete some; nothing was made.`;
  }
  scope.scheduler?.poke();
  scope.log.info(
    { taskId: added.task.id, owner: scope.user, timing: added.task.timing, nextDueMs },
    "task created",
  );
  // From the stored task: the same command made again (after a crash) answers as it did.
  const made = added.task;
  return `✅ Task ${made.id}: ${describeTiming(made.timing, made.timezone)}, next run ${formatLocal(made.nextDueMs, made.timezone)}. It runs as you and answers in this chat. /tasks lists your tasks.`;
}

function state(task: TaskRecord): string {
  if (!task.active) return "done";
  if (!task.paused) return "active";
  return task.pausedReason === undefined ? "paused" : `paused: ${task.pausedReason}`;
}

function preview(text: string): string {
  return text.length > 60 ? `${text.slice(0, 57)}…` : text;
}

/** One task's lines in a list. */
export function describeTask(task: TaskRecord, viewer: string): string {
  const owner =
    task.owner === viewer
      ? ""
      : task.owner === "operator"
        ? ` — config task ${task.name ?? ""}`
        : ` — by ${task.ownerName ?? task.owner}`;
  const next =
    task.active && !task.paused
      ? `next ${formatLocal(task.nextDueMs, task.timezone)}`
      : state(task);
  const last =
    task.lastRun === undefined
      ? ""
      : `; last: ${task.lastRun.outcome} (${formatLocal(task.lastRun.dueMs, task.timezone)})`;
  return `• ${task.id}: ${describeTiming(task.timing, task.timezone)} — ${next}${last}${owner}\n  “${preview(task.text)}”`;
}

/** The runs `/status` shows (docs/schedules.md). */
const StatusRuns = 5;

/**
 * `/status`'s lines of the profile's next runs, earliest first: times and ids only (an admin may
 * ask in a group; the tasks' texts are for `/tasks`).
 */
export async function describeNextRuns(tasks: TaskStore): Promise<string[]> {
  const due = (await tasks.listTasks())
    .filter((task) => task.active && !task.paused)
    .sort((a, b) => a.nextDueMs - b.nextDueMs);
  if (due.length === 0) return ["Next task runs: none"];
  return [
    `Next task runs (${due.length} active):`,
    ...due
      .slice(0, StatusRuns)
      .map((task) => `• ${formatLocal(task.nextDueMs, task.timezone)}: task ${task.id}`),
  ];
}

/** A task's buttons: pause or resume, run now, delete. */
export function taskButtons(task: TaskRecord): ChoiceButton[] {
  const data = (option: TaskAction) =>
    formatChoiceData({ kind: TaskChoiceKind, id: task.id, option });
  const toggle: ChoiceButton = task.paused
    ? { label: `▶ Resume ${task.id}`, data: data("resume"), style: "primary" }
    : { label: `⏸ Pause ${task.id}`, data: data("pause"), style: "secondary" };
  return [
    ...(task.active ? [toggle] : []),
    { label: "Run now", data: data("run"), style: "secondary" },
    { label: "Delete", data: data("delete"), style: "danger" },
  ];
}

/** Whether `task` answers in `chat`. */
function answersIn(task: TaskRecord, chat: TaskChat): boolean {
  return (
    task.chat.platform === chat.platform &&
    task.chat.chatId === chat.chatId &&
    task.chat.threadId === chat.threadId
  );
}

/**
 * What `/tasks` shows, with buttons for the first five. In a DM: the sender's tasks (an
 * admin's: every task of the bot). In a group or channel, where others read along, only the
 * tasks that answer in this chat: the sender's (an admin's: everyone's).
 */
export async function listTasks(
  scope: TaskScope,
): Promise<{ readonly text: string; readonly rows: ChoiceButton[][] }> {
  const mine = await scope.tasks.listTasks(scope.admin ? undefined : scope.user);
  const tasks =
    scope.chat.chatType === "dm" ? mine : mine.filter((task) => answersIn(task, scope.chat));
  if (tasks.length === 0) {
    const here = scope.chat.chatType === "dm" ? "" : " in this chat";
    return {
      text: `No tasks${here} yet. Make one with /every 1h <prompt>, /at 09:00 <prompt> or /cron "0 9 * * 1-5" <prompt>.`,
      rows: [],
    };
  }
  const heading =
    scope.chat.chatType !== "dm"
      ? "Tasks of this chat:"
      : scope.admin
        ? "Tasks of this bot:"
        : "Your tasks:";
  const lines = tasks.map((task) => describeTask(task, scope.user));
  const more =
    tasks.length > MaxButtonRows
      ? [
          `Buttons for the first ${MaxButtonRows}; type /tasks pause|resume|run|delete <id> for the others.`,
        ]
      : [];
  return {
    text: [heading, ...lines, ...more].join("\n"),
    rows: tasks.slice(0, MaxButtonRows).map(taskButtons),
  };
}

/**
 * Pause, resume, run now or delete a task, for its owner or an admin (a config task: admins
 * only). Anyone else is told there is no such task of theirs: they learn nothing of others'.
 */
export async function actOnTask(
  scope: TaskScope,
  action: TaskAction,
  id: string,
): Promise<{ readonly done: boolean; readonly text: string }> {
  const task = await scope.tasks.getTask(id);
  const mayAct =
    task !== undefined && (scope.admin || (task.owner === scope.user && task.owner !== "operator"));
  if (task === undefined || !mayAct) {
    return { done: false, text: `No task ${id} of yours here; /tasks lists yours.` };
  }
  const by = scope.userName ?? scope.user;
  const fields = { taskId: id, by: scope.user, action };
  switch (action) {
    case "delete":
      await scope.tasks.deleteTask(id);
      scope.log.info(fields, "task deleted");
      return { done: true, text: `🗑 Task ${id} deleted by ${by}.` };
    case "pause":
      if (task.paused) return { done: false, text: `Task ${id} is paused already.` };
      await scope.tasks.setPaused(id, true, task.nextDueMs);
      scope.log.info(fields, "task paused");
      return { done: true, text: `⏸ Task ${id} paused by ${by}; /tasks to resume it.` };
    case "resume": {
      if (!task.paused) return { done: false, text: `Task ${id} is not paused.` };
      const next = nextDueAfter(task.timing, task.timezone, task.createdAtMs, scope.nowMs);
      await scope.tasks.setPaused(id, false, next ?? task.nextDueMs);
      scope.scheduler?.poke();
      scope.log.info(fields, "task resumed");
      const when = next === undefined ? "" : `; next run ${formatLocal(next, task.timezone)}`;
      return { done: true, text: `▶ Task ${id} resumed by ${by}${when}.` };
    }
    case "run": {
      if (scope.scheduler === undefined) return { done: false, text: "Tasks do not run here." };
      const result = await scope.scheduler.runNow(task);
      if (result === "running") {
        return { done: false, text: `Task ${id} is running already; wait for its answer.` };
      }
      scope.log.info(fields, "task run now");
      return { done: true, text: `▶ Task ${id} runs now (asked by ${by}).` };
    }
  }
}
