import type { ChannelAdapter, InboundMessage } from "../channels/types.js";
import { interruptSession } from "../commands/stop.js";
import { Defaults } from "../defaults.js";
import type { Outbox } from "../durable/outbox.js";
import type { Journal, JournalOutcome } from "../durable/types.js";
import type { PipelineRuntime, PipelineServices } from "../pipeline/types.js";
import type { RunEnd, SubmitRun, SubmittedRun } from "../schedules/scheduler.js";
import { buildSessionKey } from "../session/key.js";
import type { TaskRecord, TaskRunOutcome } from "../state/tasks.js";
import { channelFor, type GatewayCore } from "./core.js";
import { dispatch } from "./dispatch.js";

/** The user id a config task's runs carry (its session is the target chat's). */
export const OperatorUserId = "operator";

/**
 * A due run as the message its owner would have typed (docs/schedules.md): in the task's chat,
 * from its owner, with the receipt id `task:<id>:<dueMs>` the journal dedupes on.
 */
export function scheduledMessage(profile: string, task: TaskRecord, dueMs: number): InboundMessage {
  const operator = task.owner === OperatorUserId;
  const receiptId = `task:${task.id}:${dueMs}`;
  return {
    profile,
    platform: task.chat.platform,
    chatId: task.chat.chatId,
    chatType: task.chat.chatType,
    chatName: task.chat.chatName,
    threadId: task.chat.threadId,
    userId: operator ? OperatorUserId : task.owner.slice(task.owner.indexOf(":") + 1),
    userName: task.ownerName,
    messageId: receiptId,
    text: task.text,
    receiptId,
    scheduled: { taskId: task.id, dueMs, ...(operator ? { operator: true } : {}) },
  };
}

/** Whether entry `entryId` is another process's now (handed to its session's holder). */
async function handedOn(gateway: GatewayCore, entryId: number): Promise<boolean> {
  if (gateway.replicas === undefined) return false;
  const entry = await gateway.journal.entryState(entryId).catch(() => undefined);
  return entry !== undefined && !entry.mine;
}

/** How a run ended, read from how its journal entry was closed (`undefined`: its reply went out). */
function outcomeOf(closed: JournalOutcome | undefined): TaskRunOutcome {
  switch (closed) {
    case "refused":
      return "refused";
    case "failed":
    case "stopped":
    case "overflow":
      return "failed";
    case "interrupted":
      return "interrupted";
    default:
      return "done";
  }
}

/** What a run's replies found of its chat (see {@link RunEnd}). */
interface ChatFindings {
  /** One of its replies was delivered. */
  reached: boolean;
  /** The platform said its chat is gone for the bot: its answer. */
  unreachable?: string | undefined;
}

/**
 * How a run ended: by how its journal entry was closed, unless its chat was found gone for the
 * bot (then `failed`: nobody got its answer, docs/schedules.md, "Chats that are gone").
 */
function endOf(closed: JournalOutcome | undefined, chat: ChatFindings): RunEnd {
  if (chat.unreachable !== undefined) {
    return {
      outcome: "failed",
      detail: `its chat is unreachable for the bot: ${chat.unreachable}`,
      chat: "unreachable",
    };
  }
  return { outcome: outcomeOf(closed), ...(chat.reached ? { chat: "reached" } : {}) };
}

/** `target` with its method `name` replaced by `wrap(original)`; the rest bound to it. */
function intercepting<T extends object, K extends keyof T>(
  target: T,
  name: K,
  wrap: (original: T[K]) => T[K],
): T {
  return new Proxy(target, {
    get(object, property) {
      const value: unknown = Reflect.get(object, property, object);
      const bound = typeof value === "function" ? value.bind(object) : value;
      return property === name ? wrap(bound as T[K]) : bound;
    },
  });
}

/** The journal, telling `seen` how entry `entryId` was closed. */
function watching(journal: Journal, entryId: number, seen: (outcome: JournalOutcome) => void) {
  return intercepting(journal, "finished", (finished) => (ids, outcome) => {
    if ((typeof ids === "number" ? [ids] : ids).includes(entryId)) seen(outcome);
    return finished(ids, outcome);
  });
}

/** The outbox, noting in `chat` what each delivery attempt of the run found of its chat. */
function watchingReplies(outbox: Outbox, chat: ChatFindings): Outbox {
  return intercepting(outbox, "deliver", (deliver) => async (record) => {
    const summary = await deliver(record);
    if (summary.unreachable !== undefined) chat.unreachable ??= summary.unreachable;
    else if (summary.result === "delivered") chat.reached = true;
    return summary;
  });
}

/**
 * Dispatches a run, watching how its journal entry ends, what its replies find of its chat and
 * when its turn starts; `stop` stops its session's turn as `/stop` does (the run timeout).
 */
function dispatchRun(
  gateway: GatewayCore,
  channel: ChannelAdapter,
  runtime: PipelineRuntime,
  message: InboundMessage,
  entryId: number,
  recovered: boolean,
): SubmittedRun {
  let closed: JournalOutcome | undefined;
  const chat: ChatFindings = { reached: false };
  let turnStarted = () => {};
  const started = new Promise<void>((resolve) => {
    turnStarted = resolve;
  });
  const services: PipelineServices = {
    ...gateway.services,
    journal: watching(gateway.journal, entryId, (outcome) => {
      closed = outcome;
    }),
    outbox: watchingReplies(gateway.services.outbox, chat),
    turnStarted,
  };
  const handled = dispatch(gateway, channel, message, entryId, recovered, [], services);
  const sessionKey = buildSessionKey(message, runtime.profile);
  return {
    fresh: true,
    finished: handled.then(async (): Promise<RunEnd> => {
      // Not closed here: its reply went out, or another replica holds the session and was
      // handed the run (its entry is that replica's now), which follows it to its end.
      if (closed === undefined && (await handedOn(gateway, entryId))) {
        return { outcome: "running", handedOn: true };
      }
      return endOf(closed, chat);
    }),
    started,
    stop: (reason) => {
      void interruptSession(runtime, services, sessionKey, reason).catch(() => {});
    },
  };
}

/**
 * A scheduled run the previous process left in the journal (recovery): run as any recorded
 * message is. It is its task's run going, followed by the profile's scheduler (now, or at its
 * start) as one it started: a due time of the task meanwhile is an overlap, never a second
 * run beside it; the run timeout stops it; how it ended goes to the task's record of runs.
 */
export function dispatchRecoveredRun(
  gateway: GatewayCore,
  channel: ChannelAdapter,
  message: InboundMessage,
  entryId: number,
): void {
  const scheduled = message.scheduled;
  const runtime = gateway.runtimes.get(message.profile);
  if (scheduled === undefined || runtime === undefined) return;
  const run = dispatchRun(gateway, channel, runtime, message, entryId, true);
  const scheduler = gateway.schedulers.get(message.profile);
  if (scheduler !== undefined) {
    scheduler.adopt(scheduled.taskId, scheduled.dueMs, run);
    return;
  }
  const waiting = gateway.recoveredRuns.get(message.profile) ?? [];
  waiting.push({ taskId: scheduled.taskId, dueMs: scheduled.dueMs, run });
  gateway.recoveredRuns.set(message.profile, waiting);
}

/** The detail of a cut-off run recovery runs again; one cut off again is not run a third time. */
export const RerunDetail = "run again after a restart";

/** What recovery does with a scheduled run cut off by a restart (see {@link rerunsCutOffRun}). */
export type CutOffRun = "rerun" | "not_again" | "task_gone";

/**
 * Whether a scheduled run cut off by a restart (its entry `started`) runs again
 * (docs/schedules.md, "Crashes"): yes, once. Nobody waits to send it again, and the task's
 * answer is what its chat expects. Not when it was run again once already (`not_again`: it
 * was cut off again, and a run that takes the gateway down is not run in a loop; so too when
 * its record cannot be read or written) or its task was deleted (`task_gone`). Before it runs
 * again its record says so, durably: a crash during the rerun finds that.
 */
export async function rerunsCutOffRun(
  gateway: GatewayCore,
  message: InboundMessage,
): Promise<CutOffRun> {
  const run = message.scheduled;
  const runtime = gateway.runtimes.get(message.profile);
  if (run === undefined || runtime === undefined) return "not_again";
  const { tasks } = runtime.store;
  const fields = { profile: message.profile, taskId: run.taskId, dueMs: run.dueMs };
  try {
    if ((await tasks.getTask(run.taskId)) === undefined) return "task_gone";
    const before = (await tasks.recentRuns(run.taskId, Defaults.schedules.keptRuns)).find(
      (recorded) => recorded.dueMs === run.dueMs,
    );
    if (before?.detail === RerunDetail) {
      gateway.logger.warn(fields, "scheduled run cut off again after being run again; not rerun");
      return "not_again";
    }
    const clock = gateway.options.taskClock ?? gateway.clock;
    await tasks.recordRun({
      taskId: run.taskId,
      dueMs: run.dueMs,
      outcome: "running",
      atMs: clock.wallMs(),
      detail: RerunDetail,
    });
  } catch (error) {
    gateway.logger.warn({ ...fields, err: error }, "could not mark a cut-off run; not rerun");
    return "not_again";
  }
  gateway.logger.info(fields, "scheduled run cut off by a restart; running it again");
  return "rerun";
}

/** Writes how a run the previous process left ended (cut off: `interrupted`). */
export async function recordRecoveredRun(
  gateway: GatewayCore,
  message: InboundMessage,
  outcome: TaskRunOutcome,
): Promise<void> {
  const run = message.scheduled;
  const runtime = gateway.runtimes.get(message.profile);
  if (run === undefined || runtime === undefined) return;
  const clock = gateway.options.taskClock ?? gateway.clock;
  await runtime.store.tasks
    .recordRun({
      taskId: run.taskId,
      dueMs: run.dueMs,
      outcome,
      atMs: clock.wallMs(),
      detail: "taken over after a restart",
    })
    .catch((error: unknown) =>
      gateway.logger.warn({ err: error, taskId: run.taskId }, "run not recorded"),
    );
}

/**
 * The scheduler's {@link SubmitRun} for `profile`: the run is recorded in the journal (as a
 * typed message is, so a crash finds it there and recovery runs it or tells the chat) and goes
 * through the pipeline: its owner's rights, session, sandbox slot, approvals and limits, its
 * reply and `MEDIA:` files through the outbox.
 */
export function scheduledRuns(gateway: GatewayCore, profile: string): SubmitRun {
  return async ({ task, dueMs }) => {
    const message = scheduledMessage(profile, task, dueMs);
    const channel = channelFor(gateway, profile, message.platform);
    const runtime = gateway.runtimes.get(profile);
    if (channel === undefined || runtime === undefined) {
      gateway.logger.warn(
        { profile, taskId: task.id, platform: message.platform },
        "scheduled run for a channel that is not configured; refused",
      );
      return { fresh: true, finished: Promise.resolve({ outcome: "refused" }), stop: () => {} };
    }
    const recorded = await gateway.journal.record(message);
    if (!recorded.fresh) return { fresh: false, stop: () => {} };
    return dispatchRun(gateway, channel, runtime, message, recorded.id, false);
  };
}
