import type { TaskActionName, TaskView, WebActor } from "@mediagate/web";
import type { Logger } from "../log.js";
import { InBrowser, printable } from "../printable.js";
import type { ProfileRuntime } from "../profiles/profile-runtime.js";
import type { TaskServices } from "../schedules/services.js";
import { actOnTask } from "../schedules/task-commands.js";
import { describeTiming } from "../schedules/timing.js";

/** The Tasks page (docs/web-console.md): every profile's tasks, newest last. */
export async function tasksView(
  runtimes: ReadonlyMap<string, ProfileRuntime>,
): Promise<TaskView[]> {
  const views: TaskView[] = [];
  for (const runtime of runtimes.values()) {
    for (const task of await runtime.store.tasks.listTasks()) {
      const state = !task.active ? "done" : task.paused ? "paused" : "active";
      views.push({
        profile: runtime.name,
        id: task.id,
        owner: task.owner === "operator" ? `operator (${task.name ?? ""})` : task.owner,
        // Chat users' words: escaped, so a bidi override or a control cannot disguise which
        // task Run now or Pause acts on (src/printable.ts).
        ownerName: task.ownerName === undefined ? undefined : printable(task.ownerName, InBrowser),
        timing: describeTiming(task.timing, task.timezone),
        text: printable(task.text, InBrowser),
        chat: `${task.chat.platform}:${task.chat.chatId}${task.chat.threadId === undefined ? "" : `/${task.chat.threadId}`}`,
        state,
        pausedReason: state === "paused" ? task.pausedReason : undefined,
        nextMs: state === "active" ? task.nextDueMs : undefined,
        lastRun:
          task.lastRun === undefined
            ? undefined
            : { outcome: task.lastRun.outcome, dueMs: task.lastRun.dueMs, atMs: task.lastRun.atMs },
      });
    }
  }
  return views;
}

/** Run now, pause or resume from the console: as an admin of the task's profile would. */
export async function taskAction(
  runtimes: ReadonlyMap<string, ProfileRuntime>,
  schedules: TaskServices | undefined,
  logger: Logger,
  request: { profile: string; id: string; action: TaskActionName; by: WebActor },
): Promise<string> {
  const runtime = runtimes.get(request.profile);
  if (runtime === undefined) return `No profile ${request.profile}.`;
  const result = await actOnTask(
    {
      profile: runtime.profile,
      tasks: runtime.store.tasks,
      scheduler: schedules?.schedulerOf(runtime.name),
      user: request.by.id,
      admin: true,
      chat: { platform: "console", chatId: request.by.id, chatType: "dm" },
      nowMs: schedules?.now() ?? Date.now(),
      log: logger.child({ profile: runtime.name, address: request.by.address }),
    },
    request.action,
    request.id,
  );
  return result.text;
}
