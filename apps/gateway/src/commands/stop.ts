import type { PipelineRuntime, PipelineServices } from "../pipeline/types.js";
import { sandboxProblemOf } from "../runtime/sandbox-errors.js";

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
    : `sandbox error (${error instanceof Error ? error.name : "unknown"})`;
}

/**
 * `/stop`: drops the session's queued messages, aborts its running turn (the AbortController
 * reaches the agent and the exec), kills every process the session started in the container,
 * and removes a non-persistent session container with its dirs. A persistent profile or
 * shared container stays: other sessions use it.
 */
export async function stopSession(
  runtime: PipelineRuntime,
  services: PipelineServices,
  sessionKey: string,
): Promise<StopSummary> {
  const droppedMessages = services.queue.dropQueued(sessionKey);
  const abortedTurn = services.queue.abortRunning(sessionKey, new Error("stopped by /stop"));
  const problems: string[] = [];
  let killedProcesses: number | undefined;
  try {
    killedProcesses = await runtime.sandbox.killSession(sessionKey);
  } catch (error) {
    problems.push(problemText(error));
  }
  let removedContainer = false;
  const slot = runtime.slotFor(sessionKey);
  if (!runtime.profile.sandbox.persistent && problems.length === 0) {
    try {
      await runtime.sandbox.cleanup(slot, { force: true, deleteDirs: true });
      removedContainer = true;
    } catch (error) {
      problems.push(problemText(error));
    }
  }
  return { abortedTurn, droppedMessages, killedProcesses, removedContainer, problems };
}

/** The chat line for a {@link StopSummary}. */
export function describeStop(summary: StopSummary): string {
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
  return summary.problems.length > 0 ? `${head} ⚠️ ${summary.problems.join("; ")}.` : head;
}
