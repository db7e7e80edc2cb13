import type { ChoiceAnswer } from "../channels/types.js";
import type { ChoiceHandler } from "../choices/router.js";
import { accessOfPresser } from "../commands/model-buttons.js";
import { Defaults } from "../defaults.js";
import type { Logger } from "../log.js";
import type { MessageContext, PipelineRuntime } from "../pipeline/types.js";
import { offerButtons, say } from "../pipeline/types.js";
import type { TaskStore } from "../state/tasks.js";
import type { TaskAction, TaskCommand } from "./parse.js";
import type { TaskServices } from "./services.js";
import {
  actOnTask,
  createTask,
  listTasks,
  TaskChoiceKind,
  type TaskScope,
} from "./task-commands.js";
import { answerTimezone } from "./user-timezone.js";

/** The runtime a task command works with: the pipeline's, with the profile's tasks. */
type TaskRuntime = PipelineRuntime & { readonly store: { readonly tasks: TaskStore } };

function scopeOf(ctx: MessageContext, services: TaskServices): TaskScope {
  const { message, runtime } = ctx;
  return {
    profile: runtime.profile,
    tasks: (runtime as TaskRuntime).store.tasks,
    scheduler: services.schedulerOf(runtime.profile.name),
    user: `${message.platform}:${message.userId}`,
    receiptId: `${message.platform}:${message.receiptId}`,
    userName: message.userName,
    admin: ctx.access?.admin === true,
    chat: {
      platform: message.platform,
      chatId: message.chatId,
      chatType: message.chatType,
      threadId: message.threadId,
      chatName: message.chatName,
    },
    nowMs: services.now(),
    log: ctx.log,
  };
}

/**
 * `/every`, `/at`, `/cron`, `/tasks` and `/tz` in a chat (docs/schedules.md), for every allowed user
 * (the pipeline's `authorize` let only them through): each on their own tasks, admins on all.
 */
export async function answerTaskCommand(
  ctx: MessageContext,
  services: TaskServices,
  command: TaskCommand,
): Promise<void> {
  if (ctx.message.scheduled !== undefined) {
    await say(ctx, "⛔ A task's run cannot make or change tasks.");
    return;
  }
  const scope = scopeOf(ctx, services);
  ctx.log.info({ command: command.name }, "task command");
  switch (command.name) {
    case "invalid":
      await say(ctx, `⛔ ${command.usage}`);
      return;
    case "every":
    case "at":
    case "cron":
      await say(ctx, await createTask(scope, command));
      return;
    case "task_action":
      await say(ctx, (await actOnTask(scope, command.action, command.id)).text);
      return;
    case "tz":
      await say(ctx, await answerTimezone(scope.profile, scope.tasks, scope.user, command.zone));
      return;
    case "tasks": {
      const { text, rows } = await listTasks(scope);
      const choices = ctx.channel.choices;
      const typed = rows.length > 0 ? "\nType /tasks pause|resume|run|delete <id>." : "";
      if (choices === undefined || rows.length === 0) {
        await say(ctx, `${text}${typed}`);
        return;
      }
      await offerButtons(ctx, `${text}${typed}`, async () => {
        try {
          await choices.post(
            ctx.target,
            text,
            rows,
            AbortSignal.timeout(Defaults.progress.requestTimeoutMs),
          );
          return true;
        } catch (error) {
          ctx.log.warn({ err: error }, "could not post the /tasks buttons");
          return false;
        }
      });
    }
  }
}

const Actions: readonly string[] = ["pause", "resume", "run", "delete"];

/** What {@link taskPresses} needs of the gateway. */
export interface TaskPressOptions extends TaskServices {
  readonly runtimeOf: (profile: string) => PipelineRuntime | undefined;
  readonly logger: Logger;
}

/**
 * The choice router's handler of {@link TaskChoiceKind} presses: the `/tasks` buttons. The
 * presser's rights are checked as a typed `/tasks <action> <id>` would be: their own task, or
 * any as an admin; anyone else is told there is no such task of theirs.
 */
export function taskPresses(options: TaskPressOptions): ChoiceHandler {
  return async (press, data): Promise<ChoiceAnswer> => {
    const runtime = options.runtimeOf(press.profile) as TaskRuntime | undefined;
    if (data.kind !== TaskChoiceKind || !Actions.includes(data.option) || runtime === undefined) {
      return { kind: "refused", notice: "This button does nothing any more; send /tasks." };
    }
    const access = await accessOfPresser(runtime, press.platform, press.userId);
    if (!access.allowed)
      return { kind: "refused", notice: "⛔ You are not allowed to use this bot." };
    const result = await actOnTask(
      {
        profile: runtime.profile,
        tasks: runtime.store.tasks,
        scheduler: options.schedulerOf(press.profile),
        user: `${press.platform}:${press.userId}`,
        userName: press.userName,
        admin: access.admin,
        chat: { platform: press.platform, chatId: press.chatId, chatType: "group" },
        nowMs: options.now(),
        log: options.logger.child({ profile: press.profile }),
      },
      data.option as TaskAction,
      data.id,
    );
    return result.done
      ? { kind: "decided", text: `${result.text}\nSend /tasks for the list.` }
      : { kind: "refused", notice: result.text };
  };
}
