import type { ToolRunner } from "../agents/types.js";
import { approvalGate } from "../approvals/gate.js";
import { Defaults } from "../defaults.js";
import { storeUnreachable } from "../postgres/errors.js";
import {
  type SandboxProblem,
  sandboxProblemOf,
  sandboxProblemText,
} from "../sandbox-access/sandbox-errors.js";
import { createToolRunner } from "../sandbox-access/tool-runner.js";
import { abortedByStop } from "../session/stopping.js";
import { startActivity } from "../turn-progress/activity.js";
import { describeCommand, TurnProgress } from "../turn-progress/progress.js";
import { type PreviewMode, StreamPreview } from "../turn-progress/stream-preview.js";
import { sayAndFinish } from "./command-answer.js";
import { finishEntry, previewLedger, startEntry, statusLedger } from "./journal-steps.js";
import type { TurnReport } from "./turn-report.js";
import { type MessageContext, type Middleware, say, sessionOf } from "./types.js";

/** What the chat gets when a turn fails for a reason other than the sandbox. */
export const TurnFailedText = "⚠️ Something went wrong while handling that message.";

/**
 * Step 5: the agent's turn, with the typing indicator (once it ran a second) renewed and,
 * after the profile's `progress.afterSeconds`, one status message edited with the running
 * command or tool call and the elapsed time, kept with the message's journal entry while it
 * shows, deleted once the reply's delivery attempt ended (docs/sessions.md, "Live progress");
 * on a channel that cannot edit (the console) or with `progress.enabled: false`, a one-time
 * "still working…" message after `stillWorkingAfterSeconds` instead. A turn aborted by /stop
 * ends silently (the command replies); one cut off by the gateway's stop stays started in the
 * journal (the next start tells the chat); an unreachable Docker daemon gives one clear line
 * and nothing else is affected. The turn's report gets its commands, the last one's exit
 * code, how it ended and the reply's size. The agent's notices (a voice note it could not
 * transcribe) are said before the reply goes out; the agent reads the user's files out of the
 * container through `readContainerFile` when their slot has no host path
 * (docs/inbound-media.md).
 */
export const runTurn: Middleware = async (ctx, next) => {
  const progress = newProgress(ctx);
  // The preview's wait is armed before the status's: a shell command's output waits exactly as
  // long as the status does, and when both end together the text comes first. In a private
  // chat's draft the status would otherwise be posted only to be deleted the same moment (a
  // notification for nothing); in edit mode the preview's own message is then the only one.
  const preview = startPreview(ctx, progress);
  progress?.start();
  try {
    await agentTurn(ctx, next, progress, preview);
  } finally {
    await preview?.finish();
    await progress?.finish();
    if (preview?.started === true && ctx.turn !== undefined) ctx.turn.previewCalls = preview.calls;
    if (progress?.messageId !== undefined && ctx.turn !== undefined)
      ctx.turn.statusEdits = progress.edits;
  }
};

/** The turn's status message, when the profile wants one and the channel can edit. */
function newProgress(ctx: MessageContext): TurnProgress | undefined {
  const settings = ctx.runtime.profile.progress;
  const status = ctx.channel.status;
  if (!settings.enabled || status === undefined) return undefined;
  const progress = new TurnProgress(status, ctx.target, {
    afterMs: settings.afterSeconds * 1000,
    everyMs: settings.everySeconds * 1000,
    clock: ctx.services.progressClock,
    onProblem: (what, error) => ctx.log.warn({ err: error }, what),
    ledger: statusLedger(ctx),
  });
  return progress;
}

/**
 * The streamed preview of the turn's reply (docs/streaming.md), when the profile's `stream`
 * wants one and the channel can edit: `auto` shows drafts in Telegram private chats and one
 * edited message elsewhere. The status message hands over to it once text starts.
 */
function startPreview(
  ctx: MessageContext,
  progress: TurnProgress | undefined,
): StreamPreview | undefined {
  const setting = ctx.runtime.profile.stream;
  const status = ctx.channel.status;
  if (setting === "off" || status === undefined) return undefined;
  const draftable =
    ctx.message.platform === "telegram" &&
    ctx.message.chatType === "dm" &&
    status.draft !== undefined;
  const mode: PreviewMode = setting !== "edit" && draftable ? "draft" : "edit";
  // A shell command's output streams only once the turn ran as long as its status waits, a
  // model's text once the turn ran a second: a quicker reply shows nothing before it.
  const holdMs =
    ctx.runtime.agent.kind === "shell"
      ? ctx.runtime.profile.progress.afterSeconds * 1000
      : Defaults.progress.modelPreviewHoldMs;
  return new StreamPreview(status, ctx.target, {
    mode,
    holdMs,
    render: { platform: ctx.message.platform, format: ctx.runtime.profile.format },
    clock: ctx.services.progressClock,
    onProblem: (what, error) => ctx.log.warn({ err: error }, what),
    ledger: previewLedger(ctx),
    takeOver: async (shown) => progress?.handOver(shown === "edit"),
  });
}

async function agentTurn(
  ctx: MessageContext,
  next: () => Promise<void>,
  progress: TurnProgress | undefined,
  preview: StreamPreview | undefined,
): Promise<void> {
  const session = sessionOf(ctx);
  const signal = ctx.signal ?? new AbortController().signal;
  const slot = ctx.slot ?? ctx.runtime.slotFor(session.sessionKey);
  const stopActivity = startActivity(ctx.channel, ctx.target, {
    signal,
    intervalMs: ctx.services.activityIntervalMs,
    typingAfterMs: ctx.services.typingAfterMs,
    stillWorkingAfterMs: ctx.runtime.profile.stillWorkingAfterSeconds * 1000,
    stillWorking: progress === undefined,
    onError: (error) => ctx.log.warn({ err: error }, "could not send the still-working message"),
  });
  const tools = createToolRunner({
    sandbox: ctx.runtime.sandbox,
    slot,
    sessionKey: session.sessionKey,
    signal,
    beforeFirstCommand: () => startEntry(ctx),
  });
  const turn = ctx.turn;
  const doing = (activity: string | undefined) => {
    progress?.doing(activity);
    ctx.services.live?.doing(session.sessionKey, activity);
  };
  let notices: readonly string[] = [];
  try {
    const result = await ctx.runtime.agent.runTurn({
      text: ctx.message.text,
      profile: session.profile,
      sessionKey: session.sessionKey,
      user: `${ctx.message.platform}:${ctx.message.userId}`,
      sessionId: session.sessionId,
      tools: gated(ctx, signal, tracked(tools, turn, doing), doing),
      signal,
      attachments: ctx.attachments ?? [],
      ...(preview === undefined ? {} : { onText: (piece: string) => preview.push(piece) }),
      readContainerFile: async (path, maxBytes) => {
        const file = await ctx.runtime.sandbox.readFile(slot, path, maxBytes, {
          sessionKey: session.sessionKey,
        });
        if (file === undefined || "linkTarget" in file) return undefined;
        return { size: file.size, stream: file.stream as AsyncIterable<Uint8Array> };
      },
    });
    ctx.reply = result.reply;
    notices = result.notices ?? [];
  } catch (error) {
    if (signal.aborted) {
      await endAborted(ctx, signal);
      return;
    }
    // The database went away mid-turn (the record of its first command's start, say): the
    // message is kept and run again once it answers, not closed as failed (boundary.ts).
    if (storeUnreachable(error)) throw error;
    const problem = tools.sandboxProblem ?? sandboxProblemOf(error);
    turn?.failed("runTurn", problem === undefined ? error : describeProblem(problem));
    if (problem !== undefined) {
      ctx.log.error({ err: error, slot }, "sandbox unavailable for this turn");
      await sayAndFinish(ctx, sandboxProblemText(problem), "failed");
    } else {
      ctx.log.error({ err: error, slot }, "agent turn failed");
      await sayAndFinish(ctx, TurnFailedText, "failed");
    }
    return;
  } finally {
    stopActivity();
    await preview?.stop();
  }
  if (signal.aborted) {
    await endAborted(ctx, signal);
    return;
  }
  if (tools.sandboxProblem !== undefined) {
    turn?.failed("runTurn", describeProblem(tools.sandboxProblem));
    ctx.log.error({ slot, problem: tools.sandboxProblem }, "sandbox unavailable for this turn");
    await sayAndFinish(ctx, sandboxProblemText(tools.sandboxProblem), "failed");
    return;
  }
  if (turn !== undefined) {
    turn.exit = "ok";
    turn.replyChars = (ctx.reply ?? "").length;
  }
  // The reply goes to the outbox next (sendReply), unless /stop comes while these are sent.
  for (const notice of notices) await say(ctx, notice);
  await next();
}

/**
 * The turn was aborted before its reply went to the outbox: by the gateway's stop or a lost
 * session lease (left to the restart or the session's new holder), or by /stop, /reset or a
 * newer message (closed `stopped`, no reply).
 */
export async function endAborted(ctx: MessageContext, signal: AbortSignal): Promise<void> {
  const turn = ctx.turn;
  if (abortedByStop(signal)) {
    if (turn !== undefined) turn.exit = "cut_off";
    ctx.log.warn(
      "turn cut off by the gateway's stop or a lost session lease; its chat is told after the restart or by the session's new holder",
    );
    return;
  }
  if (turn !== undefined) turn.exit = "stopped";
  const reason = signal.reason instanceof Error ? signal.reason.message : undefined;
  ctx.log.info(
    { reason },
    "turn aborted (/stop, /reset or a newer message); its reply is not delivered",
  );
  await finishEntry(ctx, "stopped");
}

/**
 * `tools` with each command's exit code noted in the turn's report, and what runs told to
 * `doing` while it runs (the turn's status message, the web console).
 */
function tracked(
  tools: ToolRunner,
  turn: TurnReport | undefined,
  doing: (activity: string | undefined) => void,
): ToolRunner {
  const during = async <T>(activity: string, work: () => Promise<T>): Promise<T> => {
    doing(activity);
    try {
      return await work();
    } finally {
      doing(undefined);
    }
  };
  return {
    run: async (command, options) => {
      const result = await during(`$ ${describeCommand(command)}`, () =>
        tools.run(command, options),
      );
      if (turn !== undefined) {
        turn.commands++;
        turn.exitCode = result.exitCode;
      }
      return result;
    },
    readFile: (path, maxBytes) =>
      during(`reading ${describeCommand(path)}`, () => tools.readFile(path, maxBytes)),
    writeFile: (path, content) =>
      during(`writing ${describeCommand(path)}`, () => tools.writeFile(path, content)),
  };
}

/** `tools` behind the profile's approvals (docs/approvals.md), when it has any. */
function gated(
  ctx: MessageContext,
  signal: AbortSignal,
  tools: ToolRunner,
  doing: (activity: string | undefined) => void,
): ToolRunner {
  const settings = ctx.runtime.profile.agent.approvals;
  const broker = ctx.services.approvals;
  const session = sessionOf(ctx);
  if (settings === undefined || settings.ask === "never" || broker === undefined) return tools;
  return approvalGate(tools, {
    broker,
    settings,
    doing,
    request: {
      profile: session.profile,
      channel: ctx.channel,
      target: ctx.target,
      sessionKey: session.sessionKey,
      sessionId: session.sessionId,
      platform: ctx.message.platform,
      userId: ctx.message.userId,
      signal,
      log: ctx.log,
    },
  });
}

function describeProblem(problem: SandboxProblem): string {
  return `sandbox ${problem.kind.replaceAll("_", " ")}`;
}
