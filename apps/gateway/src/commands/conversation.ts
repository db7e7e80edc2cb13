import { safeHead } from "../agents/tools-text.js";
import { Defaults } from "../defaults.js";
import type { PipelineRuntime, PipelineServices } from "../pipeline/types.js";
import { describeStop, type StopSummary } from "./stop.js";

/**
 * `/new`: drops the session's queued messages and aborts its running turn (its answer would
 * belong to the old conversation), then binds a new session id: the conversation and its
 * summary are gone, the sandbox container, its files and the shell's state are kept (unlike
 * `/reset`).
 */
export async function newConversation(
  runtime: PipelineRuntime,
  services: PipelineServices,
  sessionKey: string,
): Promise<string> {
  const droppedMessages = services.queue.dropQueued(sessionKey);
  const abortedTurn = services.queue.abortAnswering(sessionKey, new Error("stopped by /new"));
  await runtime.store.rotateSessionId(sessionKey);
  const stopped: StopSummary = {
    abortedTurn,
    droppedMessages,
    killedProcesses: undefined,
    removedContainer: false,
    problems: [],
  };
  const stopLine = abortedTurn || droppedMessages > 0 ? ` ${describeStop(stopped)}` : "";
  return `🆕 New conversation started; the sandbox and its files are kept.${stopLine}`;
}

/**
 * `/compact [focus]`: the agent summarizes the session's older turns now, the focus guiding
 * the summary (cut to `Defaults.compaction.focusMaxChars`, never inside a surrogate pair: half
 * of one makes the summary request invalid JSON to OpenAI's and Anthropic's endpoints). A failure changes nothing stored.
 * The summary is a model call of the session's model, recorded as the user's usage; with the
 * daily budget used up, the budget's message is the answer and nothing is asked.
 */
export async function compactConversation(
  runtime: Pick<PipelineRuntime, "agent" | "log">,
  session: { readonly sessionKey: string; readonly sessionId: string; readonly user: string },
  focus: string | undefined,
  signal: AbortSignal,
): Promise<string> {
  const { sessionId } = session;
  const agent = runtime.agent;
  if (agent.compact === undefined) {
    return "Nothing to compact: the shell agent keeps no conversation.";
  }
  const limit = Defaults.compaction.focusMaxChars;
  try {
    const result = await agent.compact({
      ...session,
      focus: focus === undefined ? undefined : safeHead(focus, limit),
      signal,
    });
    if (result.stopped !== undefined) return result.stopped;
    if (result.summarizedMessages === 0) {
      return "Nothing to compact yet: the conversation is only its newest turns, which are always kept.";
    }
    const n = result.summarizedMessages;
    return `🗜️ Compacted: ${n} older message${n === 1 ? "" : "s"} summarized (≈${result.beforeTokens} → ${result.afterTokens} tokens); the newest turns are kept as they are.`;
  } catch (error) {
    runtime.log.warn({ err: error, sessionId }, "/compact failed");
    const reason = error instanceof Error ? error.message : String(error);
    return `⚠️ Could not compact (${reason}); nothing was lost, the conversation is as it was.`;
  }
}
