import { scheduleWithTimer } from "@mediagate/io";
import { operatorAtMs } from "../config/schedules-schema.js";
import type { ProfileConfig } from "../config/types.js";
import { TaskScheduler } from "../schedules/scheduler.js";
import { nextDueAfter } from "../schedules/timing.js";
import type { NewTask, TaskRecord, TaskTiming } from "../state/tasks.js";
import { channelFor, type GatewayCore } from "./core.js";
import { OperatorUserId, scheduledRuns } from "./scheduled-runs.js";

/** The id of the config task `name`: stable, so /tasks and the web console name it the same. */
export function operatorTaskId(name: string): string {
  return `op-${name}`;
}

/** The config's `schedules.tasks` of `profile` as tasks; a one-time task whose time passed is left out. */
export function operatorTasks(profile: ProfileConfig, nowMs: number): NewTask[] {
  const tasks: NewTask[] = [];
  for (const task of profile.schedules.tasks) {
    let timing: TaskTiming;
    if (task.timing.kind === "at") {
      const atMs = operatorAtMs(task.timing.at, task.timezone, nowMs);
      if (atMs === undefined) continue;
      timing = { kind: "at", atMs };
    } else timing = task.timing;
    const nextDueMs = nextDueAfter(timing, task.timezone, nowMs, nowMs);
    if (nextDueMs === undefined) continue;
    tasks.push({
      id: operatorTaskId(task.name),
      owner: OperatorUserId,
      name: task.name,
      timing,
      timezone: task.timezone,
      text: task.text,
      chat: task.chat,
      catchUp: task.catchUp,
      nextDueMs,
    });
  }
  return tasks;
}

/** Tells a task's chat `text` (not through the outbox: a notice, not a reply). */
async function notify(gateway: GatewayCore, profile: string, task: TaskRecord, text: string) {
  const channel = channelFor(gateway, profile, task.chat.platform);
  try {
    await channel?.sendText(
      { platform: task.chat.platform, chatId: task.chat.chatId, threadId: task.chat.threadId },
      text,
      gateway.outbox.signal,
    );
  } catch (error) {
    gateway.logger.warn({ err: error, profile, taskId: task.id }, "could not tell a task's chat");
  }
}

/**
 * Writes each profile's config tasks into its store and starts its scheduler
 * (docs/schedules.md). After recovery: the runs it ran again count as going, so a due time
 * of their task that comes meanwhile is an overlap, not a second run.
 */
export async function startSchedules(gateway: GatewayCore): Promise<void> {
  for (const runtime of gateway.runtimes.values()) {
    const profile = runtime.profile;
    const store = runtime.store.tasks;
    const clock = gateway.options.taskClock ?? gateway.clock;
    await store.syncOperatorTasks(operatorTasks(profile, clock.wallMs()));
    const scheduler = new TaskScheduler({
      store,
      clock,
      schedule: gateway.options.taskSchedule ?? scheduleWithTimer,
      submit: scheduledRuns(gateway, profile.name),
      notify: (task, text) => notify(gateway, profile.name, task, text),
      log: gateway.logger.child({ profile: profile.name }),
      runTimeoutMs: profile.schedules.runTimeoutSeconds * 1000,
    });
    for (const { taskId, dueMs, run } of gateway.recoveredRuns.get(profile.name) ?? [])
      scheduler.adopt(taskId, dueMs, run);
    gateway.recoveredRuns.delete(profile.name);
    gateway.schedulers.set(profile.name, scheduler);
    scheduler.start();
  }
}

/** Stops every scheduler's timer (runs going on are the drain's). */
export function stopSchedules(gateway: GatewayCore): void {
  for (const scheduler of gateway.schedulers.values()) scheduler.stop();
}
