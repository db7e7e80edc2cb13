import { Defaults } from "../defaults.js";
import type { Queryable } from "../postgres/database.js";
import { StateLockClass } from "./postgres-pairing.js";
import { type NewTask, sameTask, type TaskRecord, type TaskRun, type TaskStore } from "./tasks.js";
import { runOf as sqliteRunOf, taskOf as sqliteTaskOf } from "./tasks-database.js";

/**
 * Scheduled tasks (docs/schedules.md) on PostgreSQL, with the semantics of tasks-database.ts
 * statement by statement; one profile's rows of the shared `state_tasks` and `state_task_runs`.
 */

interface PgTaskRow {
  id: string;
  owner: string;
  owner_name: string | null;
  name: string | null;
  timing: string;
  timezone: string;
  text: string;
  chat: string;
  catch_up: string;
  paused: boolean;
  active: boolean;
  next_due_at: string;
  overlaps_in_a_row: number;
  unreachable_in_a_row: number;
  paused_reason: string | null;
  created_at: string;
  run_due_at: string | null;
  run_outcome: string | null;
  run_at: string | null;
  run_detail: string | null;
}

interface PgRunRow {
  task_id: string;
  due_at: string;
  outcome: string;
  at: string;
  detail: string | null;
}

const orNull = (value: string | null) => (value === null ? null : Number(value));

/** The row in SQLite's shape (`bigint` as text, booleans), read by tasks-database's mapper. */
function taskOf(row: PgTaskRow): TaskRecord {
  return sqliteTaskOf({
    ...row,
    paused: row.paused ? 1 : 0,
    active: row.active ? 1 : 0,
    next_due_at: Number(row.next_due_at),
    created_at: Number(row.created_at),
    run_due_at: orNull(row.run_due_at),
    run_at: orNull(row.run_at),
  });
}

function runOf(row: PgRunRow): TaskRun {
  return sqliteRunOf({ ...row, due_at: Number(row.due_at), at: Number(row.at) });
}

/** The runs kept per task; older ones are dropped as new ones are written. */
const KeptRuns = Defaults.schedules.keptRuns;

const SelectTasks = `SELECT t.*, r.due_at AS run_due_at, r.outcome AS run_outcome, r.at AS run_at,
    r.detail AS run_detail
  FROM state_tasks t LEFT JOIN state_task_runs r
    ON r.profile = t.profile AND r.task_id = t.id AND r.due_at =
      (SELECT max(due_at) FROM state_task_runs WHERE profile = t.profile AND task_id = t.id)`;

/** How a {@link postgresTaskStore} reaches the database: the state store's own call wrappers. */
export interface TaskStoreAccess {
  readonly profile: string;
  readonly now: () => number;
  /** One statement (or several, each on its own) on the pool. */
  run<T>(operation: string, work: (db: Queryable) => Promise<T>): Promise<T>;
  /** One transaction. */
  transaction<T>(operation: string, work: (tx: Queryable) => Promise<T>): Promise<T>;
}

/** The {@link TaskStore} of one profile on PostgreSQL. */
export function postgresTaskStore(access: TaskStoreAccess): TaskStore {
  const { profile, now } = access;

  const getTask = async (db: Queryable, id: string): Promise<TaskRecord | undefined> => {
    const rows = await db.query<PgTaskRow>(`${SelectTasks} WHERE t.profile = $1 AND t.id = $2`, [
      profile,
      id,
    ]);
    const row = rows.rows[0];
    return row === undefined ? undefined : taskOf(row);
  };

  const listTasks = async (db: Queryable, owner: string | undefined): Promise<TaskRecord[]> => {
    const rows =
      owner === undefined
        ? await db.query<PgTaskRow>(
            `${SelectTasks} WHERE t.profile = $1 ORDER BY t.created_at, t.id`,
            [profile],
          )
        : await db.query<PgTaskRow>(
            `${SelectTasks} WHERE t.profile = $1 AND t.owner = $2 ORDER BY t.created_at, t.id`,
            [profile, owner],
          );
    return rows.rows.map(taskOf);
  };

  const insert = async (db: Queryable, task: NewTask, nowMs: number): Promise<void> => {
    await db.query(
      `INSERT INTO state_tasks (profile, id, owner, owner_name, name, timing, timezone, text, chat,
         catch_up, next_due_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
      [
        profile,
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
      ],
    );
  };

  const recordRun = async (db: Queryable, run: TaskRun): Promise<void> => {
    // A run that ends after its task was deleted leaves no row behind.
    await db.query(
      `INSERT INTO state_task_runs (profile, task_id, due_at, outcome, at, detail)
       SELECT $1, $2, $3, $4, $5, $6
       WHERE EXISTS (SELECT 1 FROM state_tasks WHERE profile = $1 AND id = $2)
       ON CONFLICT (profile, task_id, due_at) DO UPDATE SET outcome = excluded.outcome,
         at = excluded.at, detail = excluded.detail`,
      [profile, run.taskId, run.dueMs, run.outcome, run.atMs, run.detail ?? null],
    );
    await db.query(
      `DELETE FROM state_task_runs WHERE profile = $1 AND task_id = $2 AND due_at NOT IN
         (SELECT due_at FROM state_task_runs WHERE profile = $1 AND task_id = $2
          ORDER BY due_at DESC LIMIT ${KeptRuns})`,
      [profile, run.taskId],
    );
  };

  const deleteTask = async (db: Queryable, id: string): Promise<boolean> => {
    await db.query("DELETE FROM state_task_runs WHERE profile = $1 AND task_id = $2", [
      profile,
      id,
    ]);
    const deleted = await db.query("DELETE FROM state_tasks WHERE profile = $1 AND id = $2", [
      profile,
      id,
    ]);
    return (deleted.rowCount ?? 0) > 0;
  };

  /** The profile's tasks lock: the caps are counted, and the operator's set rewritten, under it. */
  const lockTasks = (tx: Queryable) =>
    tx.query("SELECT pg_advisory_xact_lock($1, hashtext($2))", [StateLockClass.tasks, profile]);

  return {
    addTask: (task, caps) =>
      access.transaction("addTask", async (tx) => {
        await lockTasks(tx);
        const made = await getTask(tx, task.id);
        if (made !== undefined && sameTask(made, task)) {
          return { status: "added", task: made } as const;
        }
        // Done tasks do not count against the caps: the owner's oldest beyond maxPerUser go.
        const oldDone = `SELECT id FROM state_tasks WHERE profile = $1 AND owner = $2 AND NOT active
          ORDER BY created_at DESC, id DESC OFFSET $3`;
        const pruned = [profile, task.owner, caps.maxPerUser];
        await tx.query(
          `DELETE FROM state_task_runs WHERE profile = $1 AND task_id IN (${oldDone})`,
          pruned,
        );
        await tx.query(`DELETE FROM state_tasks WHERE profile = $1 AND id IN (${oldDone})`, pruned);
        const count = async (byOwner: boolean) =>
          Number(
            (
              await tx.query<{ n: string }>(
                `SELECT count(*) AS n FROM state_tasks WHERE profile = $1 AND active
                   AND owner <> 'operator'${byOwner ? " AND owner = $2" : ""}`,
                byOwner ? [profile, task.owner] : [profile],
              )
            ).rows[0]?.n ?? 0,
          );
        const mine = await count(true);
        if (mine >= caps.maxPerUser) return { status: "user_full", count: mine } as const;
        const all = await count(false);
        if (all >= caps.maxPerProfile) return { status: "profile_full", count: all } as const;
        await insert(tx, task, now());
        const stored = await getTask(tx, task.id);
        if (stored === undefined) throw new Error(`task ${task.id} vanished after its insert`);
        return { status: "added", task: stored } as const;
      }),

    getTask: (id) => access.run("getTask", (db) => getTask(db, id)),

    listTasks: (owner) => access.run("listTasks", (db) => listTasks(db, owner)),

    dueTasks: (nowMs) =>
      access.run("dueTasks", async (db) =>
        (
          await db.query<PgTaskRow>(
            `${SelectTasks} WHERE t.profile = $1 AND t.active AND NOT t.paused AND t.next_due_at <= $2
             ORDER BY t.next_due_at, t.id`,
            [profile, nowMs],
          )
        ).rows.map(taskOf),
      ),

    nextDueMs: () =>
      access.run("nextTaskDue", async (db) => {
        const row = (
          await db.query<{ at: string | null }>(
            "SELECT min(next_due_at) AS at FROM state_tasks WHERE profile = $1 AND active AND NOT paused",
            [profile],
          )
        ).rows[0];
        return row?.at === null || row?.at === undefined ? undefined : Number(row.at);
      }),

    advanceTask: (advance, overlapsInARow) =>
      access.transaction("advanceTask", async (tx) => {
        // Compare-and-set on the due time: of two processes moving one task, one moves it.
        const moved = await tx.query(
          `UPDATE state_tasks SET next_due_at = $1, active = $2, overlaps_in_a_row = $3
           WHERE profile = $4 AND id = $5 AND next_due_at = $6 AND active`,
          [
            advance.nextDueMs ?? advance.fromDueMs,
            advance.nextDueMs !== undefined,
            overlapsInARow,
            profile,
            advance.id,
            advance.fromDueMs,
          ],
        );
        if ((moved.rowCount ?? 0) === 0) return false;
        if (advance.run !== undefined) await recordRun(tx, advance.run);
        return true;
      }),

    recordRun: (run) => access.transaction("recordTaskRun", (tx) => recordRun(tx, run)),

    recentRuns: (taskId, limit) =>
      access.run("recentTaskRuns", async (db) =>
        (
          await db.query<PgRunRow>(
            "SELECT * FROM state_task_runs WHERE profile = $1 AND task_id = $2 ORDER BY due_at DESC LIMIT $3",
            [profile, taskId, limit],
          )
        ).rows.map(runOf),
      ),

    recordReach: (id, reach) =>
      access.transaction("recordTaskReach", async (tx) => {
        if (reach.reached) {
          const reset = await tx.query(
            "UPDATE state_tasks SET unreachable_in_a_row = 0 WHERE profile = $1 AND id = $2",
            [profile, id],
          );
          return (reset.rowCount ?? 0) === 0 ? undefined : { unreachableInARow: 0, paused: false };
        }
        const row = (
          await tx.query<{ count: number; paused: boolean; active: boolean }>(
            `UPDATE state_tasks SET unreachable_in_a_row = unreachable_in_a_row + 1
             WHERE profile = $1 AND id = $2
             RETURNING unreachable_in_a_row AS count, paused, active`,
            [profile, id],
          )
        ).rows[0];
        if (row === undefined) return undefined;
        const pause = row.count >= reach.pauseAfter && !row.paused && row.active;
        if (pause) {
          await tx.query(
            "UPDATE state_tasks SET paused = true, paused_reason = $3 WHERE profile = $1 AND id = $2",
            [profile, id, reach.reason],
          );
        }
        return { unreachableInARow: row.count, paused: pause };
      }),

    setPaused: (id, paused, nextDueMs) =>
      access.run("setTaskPaused", async (db) => {
        const result = paused
          ? await db.query(
              "UPDATE state_tasks SET paused = true, paused_reason = NULL WHERE profile = $1 AND id = $2",
              [profile, id],
            )
          : await db.query(
              `UPDATE state_tasks SET paused = false, paused_reason = NULL, overlaps_in_a_row = 0,
                 unreachable_in_a_row = 0, next_due_at = $3
               WHERE profile = $1 AND id = $2`,
              [profile, id, nextDueMs],
            );
        return (result.rowCount ?? 0) > 0;
      }),

    deleteTask: (id) => access.transaction("deleteTask", (tx) => deleteTask(tx, id)),

    syncOperatorTasks: (tasks) =>
      access.transaction("syncOperatorTasks", async (tx) => {
        await lockTasks(tx);
        const nowMs = now();
        const stored = new Map(
          (await listTasks(tx, "operator")).map((task) => [task.name ?? "", task] as const),
        );
        for (const task of tasks) {
          const old = stored.get(task.name ?? "");
          stored.delete(task.name ?? "");
          if (old === undefined) {
            await insert(tx, task, nowMs);
            continue;
          }
          const sameTiming =
            JSON.stringify(old.timing) === JSON.stringify(task.timing) &&
            old.timezone === task.timezone;
          // A new timing counts from now (its `every` anchor too), as a new task would.
          await tx.query(
            `UPDATE state_tasks SET timing = $1, timezone = $2, text = $3, chat = $4, catch_up = $5,
               next_due_at = $6, active = $7, created_at = $8 WHERE profile = $9 AND id = $10`,
            [
              JSON.stringify(task.timing),
              task.timezone,
              task.text,
              JSON.stringify(task.chat),
              task.catchUp,
              sameTiming ? old.nextDueMs : task.nextDueMs,
              !(sameTiming && !old.active),
              sameTiming ? old.createdAtMs : nowMs,
              profile,
              old.id,
            ],
          );
        }
        for (const gone of stored.values()) await deleteTask(tx, gone.id);
      }),

    userTimezone: (user) =>
      access.run("userTimezone", async (db) => {
        const rows = await db.query<{ timezone: string }>(
          "SELECT timezone FROM state_user_timezones WHERE profile = $1 AND user_id = $2",
          [profile, user],
        );
        return rows.rows[0]?.timezone;
      }),

    setUserTimezone: (user, timezone) =>
      access.run("setUserTimezone", async (db) => {
        if (timezone === undefined) {
          await db.query("DELETE FROM state_user_timezones WHERE profile = $1 AND user_id = $2", [
            profile,
            user,
          ]);
          return;
        }
        await db.query(
          `INSERT INTO state_user_timezones (profile, user_id, timezone, updated_at)
           VALUES ($1, $2, $3, $4) ON CONFLICT (profile, user_id)
           DO UPDATE SET timezone = excluded.timezone, updated_at = excluded.updated_at`,
          [profile, user, timezone, now()],
        );
      }),
  };
}
