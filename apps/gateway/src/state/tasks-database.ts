import type { Database } from "better-sqlite3";
import { Defaults } from "../defaults.js";
import type {
  AddTaskResult,
  ChatReach,
  NewTask,
  ReachCount,
  TaskAdvance,
  TaskCaps,
  TaskChat,
  TaskRecord,
  TaskRun,
  TaskRunOutcome,
  TaskTiming,
} from "./tasks.js";
import { sameTask } from "./tasks.js";

/**
 * The scheduled tasks' tables (schema v7 and v9, docs/schedules.md), read and written inside
 * the state database's worker thread; `StateDatabase` calls these within its error handling.
 * All the SQL of tasks is here.
 */

/** Schema step 7: the tasks and the record of their runs (one row per due time). */
export function createTaskTables(db: Database): void {
  db.exec(`
    CREATE TABLE tasks (
      id                TEXT PRIMARY KEY NOT NULL,
      owner             TEXT NOT NULL,
      owner_name        TEXT,
      name              TEXT,
      timing            TEXT NOT NULL CHECK (json_valid(timing)),
      timezone          TEXT NOT NULL,
      text              TEXT NOT NULL,
      chat              TEXT NOT NULL CHECK (json_valid(chat)),
      catch_up          TEXT NOT NULL CHECK (catch_up IN ('once', 'skip')),
      paused            INTEGER NOT NULL DEFAULT 0 CHECK (paused IN (0, 1)),
      active            INTEGER NOT NULL DEFAULT 1 CHECK (active IN (0, 1)),
      next_due_at       INTEGER NOT NULL,
      overlaps_in_a_row INTEGER NOT NULL DEFAULT 0,
      created_at        INTEGER NOT NULL
    ) STRICT;
    CREATE INDEX tasks_by_due ON tasks (active, paused, next_due_at);
    CREATE INDEX tasks_by_owner ON tasks (owner, created_at);
    CREATE UNIQUE INDEX tasks_operator_names ON tasks (name) WHERE owner = 'operator';
    CREATE TABLE task_runs (
      task_id TEXT NOT NULL,
      due_at  INTEGER NOT NULL,
      outcome TEXT NOT NULL,
      at      INTEGER NOT NULL,
      detail  TEXT,
      PRIMARY KEY (task_id, due_at)
    ) STRICT;
  `);
}

/** A task row as SQLite returns it (the PostgreSQL store converts its rows to this). */
export interface TaskRow {
  id: string;
  owner: string;
  owner_name: string | null;
  name: string | null;
  timing: string;
  timezone: string;
  text: string;
  chat: string;
  catch_up: string;
  paused: number;
  active: number;
  next_due_at: number;
  overlaps_in_a_row: number;
  unreachable_in_a_row: number;
  paused_reason: string | null;
  created_at: number;
  run_due_at: number | null;
  run_outcome: string | null;
  run_at: number | null;
  run_detail: string | null;
}

/** A run row as SQLite returns it. */
export interface RunRow {
  task_id: string;
  due_at: number;
  outcome: string;
  at: number;
  detail: string | null;
}

/** The runs kept per task; older ones are dropped as new ones are written. */
const KeptRuns = Defaults.schedules.keptRuns;

const SelectTasks = `SELECT t.*, r.due_at AS run_due_at, r.outcome AS run_outcome, r.at AS run_at,
    r.detail AS run_detail
  FROM tasks t LEFT JOIN task_runs r ON r.task_id = t.id AND r.due_at =
    (SELECT max(due_at) FROM task_runs WHERE task_id = t.id)`;

export function taskOf(row: TaskRow): TaskRecord {
  const lastRun: TaskRun | undefined =
    row.run_due_at === null
      ? undefined
      : {
          taskId: row.id,
          dueMs: row.run_due_at,
          outcome: row.run_outcome as TaskRunOutcome,
          atMs: row.run_at ?? 0,
          ...(row.run_detail === null ? {} : { detail: row.run_detail }),
        };
  return {
    id: row.id,
    owner: row.owner,
    ...(row.owner_name === null ? {} : { ownerName: row.owner_name }),
    ...(row.name === null ? {} : { name: row.name }),
    timing: JSON.parse(row.timing) as TaskTiming,
    timezone: row.timezone,
    text: row.text,
    chat: JSON.parse(row.chat) as TaskChat,
    catchUp: row.catch_up === "skip" ? "skip" : "once",
    paused: row.paused === 1,
    active: row.active === 1,
    nextDueMs: row.next_due_at,
    overlapsInARow: row.overlaps_in_a_row,
    unreachableInARow: row.unreachable_in_a_row,
    ...(row.paused_reason === null ? {} : { pausedReason: row.paused_reason }),
    createdAtMs: row.created_at,
    ...(lastRun === undefined ? {} : { lastRun }),
  };
}

export function runOf(row: RunRow): TaskRun {
  return {
    taskId: row.task_id,
    dueMs: row.due_at,
    outcome: row.outcome as TaskRunOutcome,
    atMs: row.at,
    ...(row.detail === null ? {} : { detail: row.detail }),
  };
}

function insert(db: Database, task: NewTask, nowMs: number): void {
  db.prepare(
    `INSERT INTO tasks (id, owner, owner_name, name, timing, timezone, text, chat, catch_up,
       next_due_at, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    task.id,
    task.owner,
    task.ownerName ?? null,
    task.name ?? null,
    JSON.stringify(task.timing),
    task.timezone,
    task.text,
    JSON.stringify(task.chat),
    task.catchUp,
    task.nextDueMs,
    nowMs,
  );
}

/**
 * Adds a chat task unless a cap is reached (active tasks count). Done ones do not, so the
 * owner's oldest done tasks beyond `maxPerUser` are dropped first: the store stays bounded.
 * Run inside a transaction.
 */
export function addTask(db: Database, task: NewTask, caps: TaskCaps, nowMs: number): AddTaskResult {
  const made = getTask(db, task.id);
  if (made !== undefined && sameTask(made, task)) return { status: "added", task: made };
  const oldDone = `SELECT id FROM tasks WHERE owner = ? AND active = 0
    ORDER BY created_at DESC, id DESC LIMIT -1 OFFSET ?`;
  db.prepare(`DELETE FROM task_runs WHERE task_id IN (${oldDone})`).run(
    task.owner,
    caps.maxPerUser,
  );
  db.prepare(`DELETE FROM tasks WHERE id IN (${oldDone})`).run(task.owner, caps.maxPerUser);
  const count = (where: string, ...args: string[]) =>
    (
      db
        .prepare(`SELECT count(*) AS n FROM tasks WHERE active = 1 AND owner != 'operator'${where}`)
        .get(...args) as { n: number }
    ).n;
  const mine = count(" AND owner = ?", task.owner);
  if (mine >= caps.maxPerUser) return { status: "user_full", count: mine };
  const all = count("");
  if (all >= caps.maxPerProfile) return { status: "profile_full", count: all };
  insert(db, task, nowMs);
  const stored = getTask(db, task.id);
  if (stored === undefined) throw new Error(`task ${task.id} vanished after its insert`);
  return { status: "added", task: stored };
}

export function getTask(db: Database, id: string): TaskRecord | undefined {
  const row = db.prepare<[string], TaskRow>(`${SelectTasks} WHERE t.id = ?`).get(id);
  return row === undefined ? undefined : taskOf(row);
}

export function listTasks(db: Database, owner: string | undefined): TaskRecord[] {
  const rows =
    owner === undefined
      ? db.prepare<[], TaskRow>(`${SelectTasks} ORDER BY t.created_at, t.id`).all()
      : db
          .prepare<[string], TaskRow>(
            `${SelectTasks} WHERE t.owner = ? ORDER BY t.created_at, t.id`,
          )
          .all(owner);
  return rows.map(taskOf);
}

export function dueTasks(db: Database, nowMs: number): TaskRecord[] {
  return db
    .prepare<[number], TaskRow>(
      `${SelectTasks} WHERE t.active = 1 AND t.paused = 0 AND t.next_due_at <= ?
       ORDER BY t.next_due_at, t.id`,
    )
    .all(nowMs)
    .map(taskOf);
}

export function nextDue(db: Database): number | undefined {
  const row = db
    .prepare<[], { at: number | null }>(
      "SELECT min(next_due_at) AS at FROM tasks WHERE active = 1 AND paused = 0",
    )
    .get();
  return row?.at ?? undefined;
}

/** Writes a run row and drops the task's runs beyond the newest {@link KeptRuns}. */
export function recordRun(db: Database, run: TaskRun): void {
  // A run that ends after its task was deleted leaves no row behind.
  db.prepare(
    `INSERT INTO task_runs (task_id, due_at, outcome, at, detail)
     SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM tasks WHERE id = ?)
     ON CONFLICT (task_id, due_at) DO UPDATE SET outcome = excluded.outcome, at = excluded.at,
       detail = excluded.detail`,
  ).run(run.taskId, run.dueMs, run.outcome, run.atMs, run.detail ?? null, run.taskId);
  db.prepare(
    `DELETE FROM task_runs WHERE task_id = ? AND due_at NOT IN
       (SELECT due_at FROM task_runs WHERE task_id = ? ORDER BY due_at DESC LIMIT ${KeptRuns})`,
  ).run(run.taskId, run.taskId);
}

/** Moves a task past a due time (compare-and-set on it) with its run. Run inside a transaction. */
export function advanceTask(db: Database, advance: TaskAdvance, overlapsInARow: number): boolean {
  const moved = db
    .prepare(
      `UPDATE tasks SET next_due_at = ?, active = ?, overlaps_in_a_row = ?
       WHERE id = ? AND next_due_at = ? AND active = 1`,
    )
    .run(
      advance.nextDueMs ?? advance.fromDueMs,
      advance.nextDueMs === undefined ? 0 : 1,
      overlapsInARow,
      advance.id,
      advance.fromDueMs,
    );
  if (moved.changes === 0) return false;
  if (advance.run !== undefined) recordRun(db, advance.run);
  return true;
}

export function recentRuns(db: Database, taskId: string, limit: number): TaskRun[] {
  return db
    .prepare<[string, number], RunRow>(
      "SELECT * FROM task_runs WHERE task_id = ? ORDER BY due_at DESC LIMIT ?",
    )
    .all(taskId, limit)
    .map(runOf);
}

/** Counts a run that found the chat gone (pausing the task at the limit), or resets the count. */
export function recordReach(db: Database, id: string, reach: ChatReach): ReachCount | undefined {
  if (reach.reached) {
    const reset = db.prepare("UPDATE tasks SET unreachable_in_a_row = 0 WHERE id = ?").run(id);
    return reset.changes === 0 ? undefined : { unreachableInARow: 0, paused: false };
  }
  const row = db
    .prepare<[string], { count: number; paused: number; active: number }>(
      `UPDATE tasks SET unreachable_in_a_row = unreachable_in_a_row + 1 WHERE id = ?
       RETURNING unreachable_in_a_row AS count, paused, active`,
    )
    .get(id);
  if (row === undefined) return undefined;
  const pause = row.count >= reach.pauseAfter && row.paused === 0 && row.active === 1;
  if (pause) {
    db.prepare("UPDATE tasks SET paused = 1, paused_reason = ? WHERE id = ?").run(reach.reason, id);
  }
  return { unreachableInARow: row.count, paused: pause };
}

/** A user's pause keeps no reason; a resume forgets the reason and the counts. */
export function setPaused(db: Database, id: string, paused: boolean, nextDueMs: number): boolean {
  const sql = paused
    ? "UPDATE tasks SET paused = 1, paused_reason = NULL WHERE id = ?"
    : `UPDATE tasks SET paused = 0, paused_reason = NULL, overlaps_in_a_row = 0,
         unreachable_in_a_row = 0, next_due_at = ? WHERE id = ?`;
  const result = paused ? db.prepare(sql).run(id) : db.prepare(sql).run(nextDueMs, id);
  return result.changes > 0;
}

export function deleteTask(db: Database, id: string): boolean {
  db.prepare("DELETE FROM task_runs WHERE task_id = ?").run(id);
  return db.prepare("DELETE FROM tasks WHERE id = ?").run(id).changes > 0;
}

/** Makes the operator's tasks exactly `tasks` (by name). Run inside a transaction. */
export function syncOperatorTasks(db: Database, tasks: readonly NewTask[], nowMs: number): void {
  const stored = new Map(listTasks(db, "operator").map((task) => [task.name ?? "", task] as const));
  for (const task of tasks) {
    const old = stored.get(task.name ?? "");
    stored.delete(task.name ?? "");
    if (old === undefined) {
      insert(db, task, nowMs);
      continue;
    }
    const sameTiming =
      JSON.stringify(old.timing) === JSON.stringify(task.timing) && old.timezone === task.timezone;
    // A new timing counts from now (its `every` anchor too), as a new task would.
    db.prepare(
      `UPDATE tasks SET timing = ?, timezone = ?, text = ?, chat = ?, catch_up = ?,
         next_due_at = ?, active = ?, created_at = ? WHERE id = ?`,
    ).run(
      JSON.stringify(task.timing),
      task.timezone,
      task.text,
      JSON.stringify(task.chat),
      task.catchUp,
      sameTiming ? old.nextDueMs : task.nextDueMs,
      sameTiming && !old.active ? 0 : 1,
      sameTiming ? old.createdAtMs : nowMs,
      old.id,
    );
  }
  for (const gone of stored.values()) deleteTask(db, gone.id);
}

/**
 * Schema step 9: the runs in a row whose answer found a task's chat gone for the bot, and why
 * the gateway paused a task (docs/schedules.md, "Chats that are gone").
 */
export function addTaskReachColumns(db: Database): void {
  db.exec(`
    ALTER TABLE tasks ADD COLUMN unreachable_in_a_row INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE tasks ADD COLUMN paused_reason TEXT;
  `);
}

/**
 * Schema step 8: the time zone each user chose with `/tz` (docs/schedules.md, "Time zones"),
 * read when they make a task.
 */
export function createUserTimezoneTable(db: Database): void {
  db.exec(`
    CREATE TABLE user_timezones (
      user       TEXT PRIMARY KEY NOT NULL,
      timezone   TEXT NOT NULL,
      updated_at INTEGER NOT NULL
    ) STRICT;
  `);
}

export function userTimezone(db: Database, user: string): string | undefined {
  return db
    .prepare<[string], { timezone: string }>("SELECT timezone FROM user_timezones WHERE user = ?")
    .get(user)?.timezone;
}

export function setUserTimezone(
  db: Database,
  user: string,
  timezone: string | undefined,
  nowMs: number,
): void {
  if (timezone === undefined) {
    db.prepare("DELETE FROM user_timezones WHERE user = ?").run(user);
    return;
  }
  db.prepare(
    `INSERT INTO user_timezones (user, timezone, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (user) DO UPDATE SET timezone = excluded.timezone, updated_at = excluded.updated_at`,
  ).run(user, timezone, nowMs);
}
