import type { DatabaseWorker } from "../sqlite/database-worker.js";
import type { StateDatabase } from "./state-database.js";
import type { TaskStore } from "./tasks.js";

/**
 * The {@link TaskStore} of a SQLite state database: each operation one call into its worker
 * thread (one transaction there), stamped with the store's clock.
 */
export function sqliteTaskStore(
  worker: DatabaseWorker<StateDatabase>,
  now: () => number,
): TaskStore {
  return {
    addTask: (task, caps) => worker.call("addTask", task, caps, now()),
    getTask: (id) => worker.call("getTask", id),
    listTasks: (owner) => worker.call("listTasks", owner),
    dueTasks: (nowMs) => worker.call("dueTasks", nowMs),
    nextDueMs: () => worker.call("nextTaskDue"),
    advanceTask: (advance, overlaps) => worker.call("advanceTask", advance, overlaps),
    recordRun: (run) => worker.call("recordTaskRun", run),
    recentRuns: (taskId, limit) => worker.call("recentTaskRuns", taskId, limit),
    recordReach: (id, reach) => worker.call("recordTaskReach", id, reach),
    setPaused: (id, paused, nextDueMs) => worker.call("setTaskPaused", id, paused, nextDueMs),
    deleteTask: (id) => worker.call("deleteTask", id),
    syncOperatorTasks: (tasks) => worker.call("syncOperatorTasks", tasks, now()),
    userTimezone: (user) => worker.call("userTimezone", user),
    setUserTimezone: (user, timezone) => worker.call("setUserTimezone", user, timezone, now()),
  };
}
