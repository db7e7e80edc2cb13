import { scheduleWithTimer } from "@mediagate/io";
import { Defaults } from "../defaults.js";
import type { PipelineRuntime, PipelineServices } from "../pipeline/types.js";
import { sandboxProblemOf } from "../sandbox-access/sandbox-errors.js";
import { SlotRegistry } from "../sandbox-access/slot-registry.js";
import { parseSessionKey } from "../session/key.js";

/** What /stop did. */
export interface StopSummary {
  readonly abortedTurn: boolean;
  readonly droppedMessages: number;
  /** Processes of the session killed in the container; `undefined` when Docker failed. */
  readonly killedProcesses: number | undefined;
  /** The session's own (non-persistent) container was removed with its dirs. */
  readonly removedContainer: boolean;
  /** Problems met on the way (e.g. Docker unreachable). */
  readonly problems: readonly string[];
}

function problemText(error: unknown): string {
  return sandboxProblemOf(error)?.kind === "docker_unavailable"
    ? "the sandbox is unavailable (Docker cannot be reached)"
    : `sandbox error (${error instanceof Error ? error.name : "unknown"}; the gateway's log has the cause)`;
}

/**
 * A sandbox step of a command failed: logged with its cause (the error, its `cause` chain
 * and the fields) at error level, and the short line the chat is told returned.
 */
export function commandProblem(
  runtime: Pick<PipelineRuntime, "log">,
  what: string,
  error: unknown,
  fields: Readonly<Record<string, unknown>>,
): string {
  runtime.log.error({ err: error, ...fields }, `${what} failed`);
  return problemText(error);
}

/** What {@link interruptSession} did. */
export type InterruptSummary = Pick<StopSummary, "abortedTurn" | "killedProcesses" | "problems">;

/**
 * The kill path of `/stop`, also taken by a message that arrives in `busyMode: interrupt`
 * (docs/sessions.md): aborts the session's running turn (the AbortController reaches the agent
 * and the exec; the abort is synchronous, so a turn queued right after cannot start first),
 * then kills every process the session started in the container. Queued messages stay.
 */
export async function interruptSession(
  runtime: PipelineRuntime,
  services: PipelineServices,
  sessionKey: string,
  reason: Error,
): Promise<InterruptSummary> {
  const abortedTurn = services.queue.abortAnswering(sessionKey, reason);
  const problems: string[] = [];
  let killedProcesses: number | undefined;
  try {
    killedProcesses = await runtime.sandbox.killSession(sessionKey);
  } catch (error) {
    problems.push(
      commandProblem(runtime, "killing the session's processes", error, {
        sessionKey,
        reason: reason.message,
      }),
    );
  }
  return { abortedTurn, killedProcesses, problems };
}

/**
 * With replicas (docs/cluster.md): closes as `stopped` the sessions' messages waiting in the
 * journal for this replica (handed to it and not picked up yet, or left to the cluster), as
 * `/stop`, `/stop all` and `/reset` drop their queued ones; how many. A failure is logged and
 * counts none.
 */
export async function dropWaiting(
  runtime: PipelineRuntime,
  services: PipelineServices,
  sessionKeys: readonly string[],
): Promise<number> {
  if (services.sessions === undefined || sessionKeys.length === 0) return 0;
  // A `shared:` slot's sessions (`/stop all`) may be of other profiles: the key names its own.
  const sessions = sessionKeys.map((sessionKey) => ({
    profile: parseSessionKey(sessionKey)?.profile ?? runtime.profile.name,
    sessionKey,
  }));
  return services.sessions.dropWaiting(sessions).catch((error: unknown) => {
    runtime.log.warn(
      { err: error, sessions: sessionKeys.length, sessionKey: sessionKeys[0] },
      "could not drop the sessions' handed-over messages",
    );
    return 0;
  });
}

/**
 * Resolves once the replies of `sessionKeys` on their way (answered turns, their delivery
 * attempt under way: `TurnQueue#delivered`) went out, or after `deliveryWaitMs` at the
 * latest (`Defaults.stopping.deliveryWaitMs`): before `/stop` and `/reset` remove the files
 * those replies name.
 */
export async function repliesOnTheirWay(
  services: PipelineServices,
  sessionKeys: readonly string[],
): Promise<void> {
  let cancel = (): void => {};
  const bound = new Promise<void>((resolve) => {
    cancel = scheduleWithTimer(
      resolve,
      services.deliveryWaitMs ?? Defaults.stopping.deliveryWaitMs,
    );
  });
  try {
    await Promise.race([
      Promise.all(sessionKeys.map((key) => services.queue.delivered(key))),
      bound,
    ]);
  } finally {
    cancel();
  }
}

/**
 * `/stop`: drops the session's queued messages, then {@link interruptSession} (aborts its
 * running turn, kills every process the session started in the container), and removes a
 * non-persistent session container with its dirs. A persistent profile or shared container
 * stays: other sessions use it. A turn whose reply already went to the outbox is not aborted,
 * and its delivery attempt opens the files the reply names from the session's container and
 * dirs: the removal waits until that attempt ended (docs/sessions.md, "Busy sessions"). No
 * turn of the session starts meanwhile (`TurnQueue#hold`), so none starts in the
 * container being removed.
 */
export async function stopSession(
  runtime: PipelineRuntime,
  services: PipelineServices,
  sessionKey: string,
): Promise<StopSummary> {
  const release = services.queue.hold(sessionKey);
  try {
    const droppedMessages =
      services.queue.dropQueued(sessionKey) + (await dropWaiting(runtime, services, [sessionKey]));
    const interrupted = await interruptSession(
      runtime,
      services,
      sessionKey,
      new Error("stopped by /stop"),
    );
    const { abortedTurn, killedProcesses } = interrupted;
    const problems = [...interrupted.problems];
    let removedContainer = false;
    const slot = runtime.slotFor(sessionKey);
    if (!runtime.profile.sandbox.persistent && problems.length === 0) {
      try {
        await repliesOnTheirWay(services, [sessionKey]);
        await runtime.sandbox.cleanup(slot, { force: true, deleteDirs: true });
        removedContainer = true;
      } catch (error) {
        problems.push(
          commandProblem(runtime, "/stop: removing the session's container", error, {
            sessionKey,
            slot,
          }),
        );
      }
    }
    return { abortedTurn, droppedMessages, killedProcesses, removedContainer, problems };
  } finally {
    release();
  }
}

/**
 * What {@link describeStop} tells: what was stopped; what a command did not do (kill, remove,
 * meet problems) may be left out.
 */
export type StopCounts = Pick<StopSummary, "abortedTurn" | "droppedMessages"> &
  Partial<Pick<StopSummary, "killedProcesses" | "removedContainer" | "problems">>;

/** The chat line for a {@link StopSummary} (or the counts of what `/reset` stopped). */
export function describeStop(summary: StopCounts): string {
  const problems = summary.problems ?? [];
  const done: string[] = [];
  if (summary.abortedTurn) done.push("aborted the running turn");
  if (summary.killedProcesses !== undefined && summary.killedProcesses > 0) {
    done.push(`killed ${summary.killedProcesses} process(es)`);
  }
  if (summary.droppedMessages > 0)
    done.push(`dropped ${summary.droppedMessages} queued message(s)`);
  if (summary.removedContainer) done.push("removed the session's container");
  const head =
    done.length > 0 ? `🛑 Stopped: ${done.join(", ")}.` : "Nothing was running for this session.";
  return problems.length > 0 ? `${head} ⚠️ ${problems.join("; ")}.` : head;
}

/** `/stop` (or the web console's Stop) of a session another replica runs: what the admin is told (docs/cluster.md). */
export function stoppedElsewhereText(holder: string): string {
  return `🛑 This session runs on replica ${holder}: it was asked to stop it there (abort the running turn, drop queued messages).`;
}

/** `/stop all` in a cluster: the other replicas asked to stop the slot there too (docs/cluster.md). */
export function stoppedOnReplicasText(replicas: readonly string[]): string {
  return `Replica(s) ${replicas.join(", ")} were asked to stop everything in this slot there too.`;
}

/** What /stop all did. */
export interface SlotStopSummary {
  readonly slot: string;
  /** Sessions this process knows on the slot whose running turn was aborted. */
  readonly abortedTurns: number;
  readonly droppedMessages: number;
  /** Processes killed in the slot's container; `undefined` when Docker failed. */
  readonly killedProcesses: number | undefined;
  readonly problems: readonly string[];
}

/**
 * `/stop all`: for every session this process has seen on the sender's slot (across
 * profiles for a `shared:` slot), drops its queued messages and aborts its running turn;
 * then kills every process any session started in the slot's container (sessions of other
 * gateway processes too), leaving the container and everyone's files in place; then closes
 * the sessions' messages waiting in the journal for this replica ({@link dropWaiting}). The
 * one way out of a fork loop started by another session.
 */
export async function stopSlot(
  runtime: PipelineRuntime,
  services: PipelineServices,
  sessionKey: string,
): Promise<SlotStopSummary> {
  const slot = runtime.slotFor(sessionKey);
  const sessions = services.slots.sessions(
    SlotRegistry.slotId(runtime.profile.name, slot),
    sessionKey,
  );
  let droppedMessages = 0;
  let abortedTurns = 0;
  const reason = new Error("stopped by /stop all");
  for (const key of sessions) {
    droppedMessages += services.queue.dropQueued(key);
    if (services.queue.abortAnswering(key, reason)) abortedTurns += 1;
  }
  const problems: string[] = [];
  let killedProcesses: number | undefined;
  try {
    killedProcesses = await runtime.sandbox.killSlot(slot);
  } catch (error) {
    problems.push(
      commandProblem(runtime, "/stop all: killing the slot's processes", error, {
        sessionKey,
        slot,
      }),
    );
  }
  // As /stop: their messages waiting in the journal for this replica too (docs/cluster.md),
  // or they would run after "Stopped everything". After the kill, which must not wait for the
  // journal: a read of every open entry of each profile and platform among the sessions.
  droppedMessages += await dropWaiting(runtime, services, sessions);
  return { slot, abortedTurns, droppedMessages, killedProcesses, problems };
}

/** The chat line for a {@link SlotStopSummary}. */
export function describeSlotStop(summary: SlotStopSummary): string {
  const done: string[] = [];
  if (summary.killedProcesses !== undefined) {
    done.push(`killed ${summary.killedProcesses} process(es)`);
  }
  if (summary.abortedTurns > 0) done.push(`aborted ${summary.abortedTurns} running turn(s)`);
  if (summary.droppedMessages > 0) {
    done.push(`dropped ${summary.droppedMessages} queued message(s)`);
  }
  const head =
    done.length > 0
      ? `🛑 Stopped everything in slot ${summary.slot}: ${done.join(", ")}.`
      : `Nothing was stopped in slot ${summary.slot}.`;
  return summary.problems.length > 0 ? `${head} ⚠️ ${summary.problems.join("; ")}.` : head;
}
