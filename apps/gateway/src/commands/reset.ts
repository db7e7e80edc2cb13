import type { PipelineRuntime, PipelineServices } from "../pipeline/types.js";
import { SlotRegistry } from "../sandbox-access/slot-registry.js";
import { commandProblem, describeStop, dropWaiting, repliesOnTheirWay } from "./stop.js";

/** What /reset answered. */
export type ResetResult =
  | { readonly status: "needs_confirm"; readonly slot: string; readonly sharedBy: number }
  | { readonly status: "done"; readonly text: string };

/**
 * `/reset`: drops the session's queued messages and aborts its running turn, then a new
 * session id (conversation cleared) and a forced teardown of the slot's container with its
 * dirs, so the next message gets a fresh one. Removing the container ends every process in
 * it, so nothing is killed inside first: that would need room in the container, which fork
 * loops at its pids limit leave none of (docs/security.md, "Stopping"). A turn whose reply
 * already went to the outbox is not aborted, and the teardown waits until its delivery attempt
 * ended, as /stop's does (`stopSession`); on a shared container, until every such attempt of
 * the sessions this process has seen on it ended.
 * When the slot is shared (a persistent profile slot or a `shared:` slot), nothing happens
 * until `/reset confirm`; the question names how many sessions this process has seen use it.
 */
export async function resetSession(
  runtime: PipelineRuntime,
  services: PipelineServices,
  sessionKey: string,
  confirm: boolean,
): Promise<ResetResult> {
  const slot = runtime.slotFor(sessionKey);
  const slotId = SlotRegistry.slotId(runtime.profile.name, slot);
  if (runtime.isSharedSlot(slot) && !confirm) {
    return { status: "needs_confirm", slot, sharedBy: services.slots.count(slotId, sessionKey) };
  }
  // As /stop: no turn of the session starts in the container being removed, and a reply on
  // its way is delivered before its files go.
  const release = services.queue.hold(sessionKey);
  let abortedTurn: boolean;
  let droppedMessages: number;
  let teardown = "removed the container and its files";
  try {
    const queued = services.queue.dropQueued(sessionKey);
    abortedTurn = services.queue.abortAnswering(sessionKey, new Error("stopped by /reset"));
    // As /stop: those waiting in the journal for this replica too (docs/cluster.md), or they
    // would run after the reset, in the new conversation.
    droppedMessages = queued + (await dropWaiting(runtime, services, [sessionKey]));
    await runtime.store.rotateSessionId(sessionKey);
    try {
      // Every reply on its way from this container (a shared one's: of any session on it) is
      // delivered first: its attempt opens the files it names there.
      const sessions = services.slots.sessions(slotId, sessionKey);
      await repliesOnTheirWay(services, sessions);
      await runtime.sandbox.cleanup(slot, { force: true, deleteDirs: true });
      // Other sessions' turns and queued messages on the slot go on: /stop all still stops them.
      services.slots.forget(slotId, (key) => services.queue.busy(key));
    } catch (error) {
      const problem = commandProblem(
        runtime,
        "/reset: removing the container and its files",
        error,
        { sessionKey, slot },
      );
      teardown =
        error instanceof Error && error.name === "SlotDirectoryError"
          ? `removed the container but kept its files: they could not be deleted safely (${error.message})`
          : `could not remove the container: ${problem}`;
    }
  } finally {
    release();
  }
  const stopLine =
    abortedTurn || droppedMessages > 0 ? ` ${describeStop({ abortedTurn, droppedMessages })}` : "";
  return {
    status: "done",
    text: `♻️ Reset: new conversation started, ${teardown}.${stopLine}`,
  };
}

/** The confirmation question for a shared slot. */
export function describeResetConfirm(slot: string, sharedBy: number): string {
  const who = sharedBy === 1 ? "1 session" : `${sharedBy} sessions`;
  return (
    `⚠️ This session's container (slot ${slot}) is shared: ${who} known to this gateway use it. ` +
    "/reset stops and removes it for all of them. Send /reset confirm to go ahead."
  );
}
