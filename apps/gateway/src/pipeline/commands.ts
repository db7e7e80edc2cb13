import { ApprovedNotice, approveInChat } from "../commands/approve.js";
import { compactConversation, newConversation } from "../commands/conversation.js";
import { describeHelp } from "../commands/help.js";
import { chooseModel, describeChoice, describeModels } from "../commands/model.js";
import {
  type AdminCommand,
  type ApprovalCommand,
  type ConversationCommand,
  commandLogFields,
  type HelpCommand,
  type ModelCommand,
  parseCommand,
} from "../commands/parse.js";
import { describeResetConfirm, resetSession } from "../commands/reset.js";
import { describeCluster, describeStatus } from "../commands/status.js";
import {
  describeSlotStop,
  describeStop,
  stoppedElsewhereText,
  stoppedOnReplicasText,
  stopSession,
  stopSlot,
} from "../commands/stop.js";
import { describeUsage } from "../commands/usage.js";
import { answerTaskCommand } from "../schedules/chat.js";
import { parseTaskCommand } from "../schedules/parse.js";
import { describeNextRuns } from "../schedules/task-commands.js";
import type { StateStore } from "../state/state-store.js";
import { answerAndFinish, CommandAnswer } from "./command-answer.js";
import { type MessageContext, type Middleware, offerButtons, say, sessionOf } from "./types.js";

/**
 * Step 3: `/stop [all]`, `/reset [confirm]`, `/status`, `/new`, `/compact [focus]`, `/help` and
 * `/start` are handled here, at once, bypassing the session queue (so /stop reaches a session
 * whose turn is running). `/help` and `/start` answer every allowed user with what the bot is
 * and the commands they may use, `/new` and `/compact` act on their own session; the others
 * are for admins: anyone else gets a clear refusal and nothing happens. Other
 * messages continue to the agent turn.
 */
export const handleCommands: Middleware = async (ctx, next) => {
  const taskCommand = parseTaskCommand(ctx.message.text);
  const schedules = ctx.services.schedules;
  if (taskCommand !== undefined && schedules !== undefined) {
    await answering(ctx, taskCommand.name, () => answerTaskCommand(ctx, schedules, taskCommand));
    return;
  }
  const command = parseCommand(ctx.message.text);
  if (command === undefined) return next();
  // Without pairing, `/approve …` is an ordinary message, as it was before pairing existed.
  if (command.name === "approve" && ctx.runtime.profile.access !== "pairing") return next();
  // A shell profile has no models: there `/model` and `/usage` are commands for its shell.
  const modelCommand = command.name === "model" || command.name === "usage";
  if (modelCommand && ctx.runtime.profile.agent.kind !== "openai") return next();
  await answering(ctx, command.name, async () => {
    if (command.name === "help") await answerHelp(ctx, command);
    else if (command.name === "model" || command.name === "usage") await answerModel(ctx, command);
    else if (command.name === "allow" || command.name === "deny")
      await answerApproval(ctx, command);
    else if (command.name === "new" || command.name === "compact") {
      await runConversationCommand(ctx, command);
    } else await runCommand(ctx, command);
  });
};

/**
 * Runs a command with its answer collected (every `say`), then records the answer with the
 * close of the message's journal entry (outcome `command`) and delivers it through the outbox
 * (pipeline/command-answer.ts). A command that throws is closed with what it said so far.
 */
async function answering(
  ctx: MessageContext,
  name: string,
  run: () => Promise<void>,
): Promise<void> {
  const answer = new CommandAnswer();
  ctx.answer = answer;
  try {
    await run();
  } finally {
    ctx.answer = undefined;
    await answerAndFinish(ctx, "command", answer);
    ctx.log.info({ command: name }, "command done");
  }
}

/**
 * `/allow [session]` and `/deny` (docs/approvals.md): decide the chat's newest pending
 * approval, if it was asked before the answer was sent, for whoever may; the broker says who
 * may and answers everyone else politely.
 */
async function answerApproval(ctx: MessageContext, command: ApprovalCommand): Promise<void> {
  const { message } = ctx;
  const broker = ctx.services.approvals;
  if (broker === undefined) {
    await say(ctx, "Nothing is waiting for approval here.");
    return;
  }
  ctx.log.info({ command: commandLogFields(command) }, "approval command");
  await say(
    ctx,
    await broker.typed(
      message.profile,
      { platform: message.platform, chatId: message.chatId, threadId: message.threadId },
      {
        userId: message.userId,
        userName: message.userName,
        status:
          command.name === "deny" ? "denied" : command.session ? "allowed_session" : "allowed",
        sentAtMs: message.sentAtMs,
      },
      ctx.channel,
    ),
  );
}

/** `/help` and `/start` (docs/sessions.md, "First contact and help"). */
async function answerHelp(ctx: MessageContext, command: HelpCommand): Promise<void> {
  const { message, runtime, channel } = ctx;
  const admin = ctx.access?.admin === true;
  ctx.log.info({ command: command.start ? "start" : "help", admin }, "help command");
  await say(
    ctx,
    describeHelp({
      profile: runtime.profile.name,
      agent: runtime.profile.agent,
      platform: message.platform,
      chatType: message.chatType,
      admin,
      maxFileBytes: channel.attachments?.maxBytes,
      botName: channel.addressedAs?.(),
      pairing: runtime.profile.access === "pairing",
    }),
  );
}

/** `/model [name]` and `/usage` (docs/models-and-usage.md), for every allowed user. */
async function answerModel(ctx: MessageContext, command: ModelCommand): Promise<void> {
  const { runtime } = ctx;
  const agent = runtime.profile.agent;
  if (agent.kind !== "openai") return;
  const admin = ctx.access?.admin === true;
  const session = sessionOf(ctx);
  ctx.log.info({ command: commandLogFields(command), admin }, "model command");
  if (command.name === "usage") {
    await say(
      ctx,
      await describeUsage(runtime.store, agent, runtime.profile.name, session.sessionKey, admin),
    );
    return;
  }
  if (command.choice === undefined) {
    const text = await describeModels(runtime.store, agent, session.sessionKey, admin);
    const buttons = ctx.services.modelButtons;
    if (buttons === undefined) await say(ctx, text);
    else {
      await offerButtons(ctx, text, () =>
        buttons.offer(
          ctx.channel,
          ctx.target,
          ctx.message,
          runtime,
          session.sessionKey,
          admin,
          text,
        ),
      );
    }
    return;
  }
  const choice = await chooseModel(runtime.store, agent, session.sessionKey, command.choice, admin);
  if (choice.status === "switched" && !choice.unchanged) {
    ctx.log.info({ model: choice.model.name }, "session model switched");
  }
  await say(ctx, describeChoice(choice));
}

/** `/new` and `/compact [focus]`: every allowed user, on their own session. */
async function runConversationCommand(
  ctx: MessageContext,
  command: ConversationCommand,
): Promise<void> {
  const session = sessionOf(ctx);
  ctx.log.info({ command: commandLogFields(command) }, "conversation command");
  if (command.name === "new") {
    await say(ctx, await newConversation(ctx.runtime, ctx.services, session.sessionKey));
    return;
  }
  await say(
    ctx,
    await compactConversation(
      ctx.runtime,
      {
        sessionKey: session.sessionKey,
        sessionId: session.sessionId,
        user: `${ctx.message.platform}:${ctx.message.userId}`,
      },
      command.focus,
      ctx.services.outbox.signal,
    ),
  );
}

/**
 * With replicas (docs/cluster.md): asks the live replica holding the session, when it is
 * another one, to stop it; its id, or `undefined` when this process is the one to act (or the
 * database does not answer: it acts on what it has).
 */
async function askHolder(ctx: MessageContext, sessionKey: string): Promise<string | undefined> {
  const sessions = ctx.services.sessions;
  if (sessions === undefined) return undefined;
  return sessions
    .askHolder({ profile: ctx.message.profile, sessionKey })
    .catch((error: unknown) => {
      ctx.log.warn({ err: error }, "could not ask the session's holder; acting here");
      return undefined;
    });
}

/** `/stop all` across the cluster: the other live replicas asked (none with SQLite or on failure). */
async function askEveryReplica(
  ctx: MessageContext,
  sessionKey: string,
): Promise<readonly string[]> {
  const sessions = ctx.services.sessions;
  if (sessions === undefined) return [];
  return sessions
    .askEveryReplica({ profile: ctx.message.profile, sessionKey })
    .catch((error: unknown) => {
      ctx.log.warn({ err: error }, "could not ask the other replicas; stopping here only");
      return [];
    });
}

async function runCommand(ctx: MessageContext, command: AdminCommand): Promise<void> {
  if (ctx.access?.admin !== true) {
    ctx.log.info({ command: command.name }, "admin command refused");
    await say(ctx, `⛔ /${command.name} is for admins only; nothing was done.`);
    return;
  }
  const session = sessionOf(ctx);
  const { runtime, services } = ctx;
  ctx.log.info({ command: commandLogFields(command) }, "admin command");
  switch (command.name) {
    case "stop":
      if (!command.all) {
        const holder = await askHolder(ctx, session.sessionKey);
        if (holder !== undefined) {
          await say(ctx, stoppedElsewhereText(holder));
          return;
        }
      }
      if (command.all) {
        const elsewhere = await askEveryReplica(ctx, session.sessionKey);
        const here = describeSlotStop(await stopSlot(runtime, services, session.sessionKey));
        await say(ctx, elsewhere.length > 0 ? `${here} ${stoppedOnReplicasText(elsewhere)}` : here);
        return;
      }
      await say(ctx, describeStop(await stopSession(runtime, services, session.sessionKey)));
      return;
    case "reset": {
      const result = await resetSession(runtime, services, session.sessionKey, command.confirm);
      if (result.status === "done") {
        // The session's new id is in the store replicas share; its turn runs on the replica
        // holding the session, which is asked to stop it there.
        await askHolder(ctx, session.sessionKey);
        await say(ctx, result.text);
        return;
      }
      const question = describeResetConfirm(result.slot, result.sharedBy);
      const buttons = services.resetButtons;
      if (buttons === undefined) await say(ctx, question);
      else {
        await offerButtons(ctx, question, () =>
          buttons.ask(ctx.channel, ctx.target, ctx.message, session.sessionKey, question),
        );
      }
      return;
    }
    case "approve": {
      const { message } = ctx;
      const approver = `${message.platform}:${message.userId}`;
      const outcome = await approveInChat(
        runtime.profile,
        runtime.store,
        approver,
        command.code,
        runtime.store.now(),
      );
      await say(ctx, outcome.text);
      if (outcome.approved !== undefined) {
        ctx.log.info({ user: outcome.approved.user, approver }, "pairing approved");
        await tellApproved(ctx, outcome.approved);
      }
      return;
    }
    case "status": {
      const status = await describeStatus(runtime, services, session.sessionKey, session.sessionId);
      const tasks = (runtime.store as Partial<Pick<StateStore, "tasks">>).tasks;
      const runs = tasks === undefined ? [] : await describeNextRuns(tasks);
      // The cluster's hosts and versions are the operator's business: admins only.
      const cluster =
        ctx.access?.admin === true ? await services.cluster?.().catch(() => undefined) : undefined;
      await say(
        ctx,
        [status, ...runs, ...(cluster === undefined ? [] : describeCluster(cluster))].join("\n"),
      );
      return;
    }
  }
}

/**
 * Tells an approved user, in the DM they asked from, that they may go on: when they asked on
 * the platform the admin approved on (the profile's one channel there); otherwise they find
 * out by writing again.
 */
async function tellApproved(
  ctx: MessageContext,
  approved: { readonly user: string; readonly chatId: string },
): Promise<void> {
  const platform = approved.user.slice(0, approved.user.indexOf(":"));
  if (platform !== ctx.channel.platform) return;
  try {
    await ctx.channel.sendText(
      { platform: ctx.channel.platform, chatId: approved.chatId },
      ApprovedNotice,
      ctx.services.outbox.signal,
    );
  } catch (error) {
    ctx.log.warn({ err: error, user: approved.user }, "could not tell the approved user");
  }
}
