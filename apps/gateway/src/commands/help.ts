import { formatBytes } from "@mediagate/media";
import { AttachUsage } from "../channels/console-attach.js";
import type { ChatType, Platform } from "../channels/types.js";
import type { AgentSettings } from "../config/types.js";

/** What `/start` and `/help` are told about the chat they were sent in. */
export interface HelpContext {
  readonly profile: string;
  readonly agent: AgentSettings;
  readonly platform: Platform;
  readonly chatType: ChatType;
  /** The sender is one of the profile's admins (they see the admin commands). */
  readonly admin: boolean;
  /** Largest file a user may send on this channel; absent when the channel takes no files. */
  readonly maxFileBytes?: number | undefined;
  /** How users address the bot (`@name` on Telegram), for the group hint; see `ChannelAdapter.addressedAs`. */
  readonly botName?: string | undefined;
  /** The profile pairs unknown users (`access: pairing`): admins also see `/approve`. */
  readonly pairing?: boolean | undefined;
}

/** The admin command of a pairing profile (docs/security.md, "Pairing"). */
export const ApproveCommandHelp =
  "/approve CODE — let the user who got this code in a direct message use the bot";

/** The commands an admin may use, as `/help` lists them (docs/sessions.md, "Commands"). */
export const AdminCommandHelp = [
  "/status — this session, its sandbox container and queue",
  "/stop — abort the running command, kill what this session started, drop its queue",
  "/stop all — the same for every session on this sandbox container",
  "/reset — /stop, then a new conversation and a fresh sandbox (/reset confirm when shared)",
] as const;

/** The one command everyone allowed may use. */
export const HelpCommandHelp = "/help — this text";

/** The model commands of an `openai` profile, for everyone allowed (docs/models-and-usage.md). */
export const ModelCommandHelp = [
  "/model — this session's model and the ones you may pick; /model <name> switches",
  "/usage — tokens and cost of this session (admins: of the whole profile too)",
] as const;

/**
 * The typed answers to an approval question (docs/approvals.md), where the profile's
 * `agent.approvals` asks: for everyone allowed with `approvers: sender` (the person who asked
 * decides), for admins only with `approvers: admins`.
 */
export const ApprovalCommandHelp = [
  "/allow — allow the action waiting for approval here, once; /allow session: for the rest of this session",
  "/deny — refuse the action waiting for approval here",
] as const;

/** The conversation commands of the openai agent, for everyone allowed (docs/sessions.md). */
export const ConversationCommandHelp = [
  "/new — start a new conversation (the sandbox and its files stay)",
  "/compact [focus] — summarize the older messages now, keeping what the focus names",
] as const;

/** The task commands, for everyone allowed (docs/schedules.md). */
export const TaskCommandHelp = [
  "/every <interval> <prompt> — a task that sends the prompt every 30m, 1h, 1d, …",
  "/at <HH:MM or YYYY-MM-DD HH:MM> <prompt> — a task that sends it once, at that time",
  '/cron "<min hour day month weekday>" <prompt> — a task by a cron pattern (quoted)',
  "/tasks — your tasks, with buttons to pause, run now and delete",
  "/tz [zone] — your time zone for /at and /cron (e.g. /tz Europe/Berlin); /tz alone shows it",
] as const;

function agentLines(agent: AgentSettings): string[] {
  if (agent.kind === "shell") {
    return [
      "Each message is run as a shell command in this chat's sandbox (a Linux container): the working directory starts at /workspace and, like exported variables, carries over to the next message. The reply is the command's output.",
      "A line MEDIA:/path/to/file in the output sends that file here.",
    ];
  }
  return [
    `Each message goes to the model (${agent.defaultModel}), which can run commands and read and write files in this chat's sandbox (a Linux container, /workspace) before it answers. It remembers the conversation until /new or /reset; when it grows past what the model can read, the older messages are summarized (you are told when).`,
  ];
}

function fileLines(context: HelpContext): string[] {
  const limit =
    context.maxFileBytes === undefined ? "" : ` (up to ${formatBytes(context.maxFileBytes)} each)`;
  const where =
    context.agent.kind === "shell"
      ? "It is saved in /workspace/inbox/; the command sent with it finds the paths in $MEDIAGATE_ATTACHMENTS, a file sent alone is listed."
      : "It is saved in /workspace/inbox/ and the model is told where.";
  switch (context.platform) {
    case "telegram":
      return [
        `Files: send a photo, document, voice note, audio, video or an album${limit}, with the message as its caption or without one. ${where}`,
      ];
    case "discord":
      return [`Files: attach them to a message${limit}, with or without text. ${where}`];
    case "console":
      return [`Files: ${AttachUsage}${limit}. ${where}`];
  }
}

function groupLine(context: HelpContext): string[] {
  if (context.chatType !== "group") return [];
  const name = context.botName ?? "the bot";
  switch (context.platform) {
    case "telegram": {
      const command = context.botName === undefined ? "/help@<bot>" : `/help${context.botName}`;
      return [
        `In a group I answer only when addressed: mention ${name}, reply to one of my messages, or add my name to a command (${command}).`,
      ];
    }
    case "discord":
      return [
        `In a server channel I answer when mentioned (${name}), or always in a channel the operator configured.`,
      ];
    case "console":
      return [];
  }
}

/**
 * The answer to `/start` and `/help` (docs/sessions.md, "First contact and help"): what this
 * bot is (profile and agent), what a message does, how to send files, and the commands this
 * user may use — the ones the profile offers (the `openai` agent's, `/allow` and `/deny` where
 * approvals ask, the task commands), and admins the admin commands too. Also what is special about groups, in a
 * group.
 */
export function describeHelp(context: HelpContext): string {
  const agentName = context.agent.kind === "shell" ? "shell agent" : "openai agent";
  const approvals = context.agent.approvals;
  const approvers =
    approvals === undefined || approvals.ask === "never" ? undefined : approvals.approvers;
  const adminCommands = [
    ...(approvers === "admins" ? ApprovalCommandHelp : []),
    ...AdminCommandHelp,
    ...(context.pairing ? [ApproveCommandHelp] : []),
  ];
  const everyone = [
    HelpCommandHelp,
    ...(context.agent.kind === "openai" ? [...ModelCommandHelp, ...ConversationCommandHelp] : []),
    ...(approvers === "sender" ? ApprovalCommandHelp : []),
    ...TaskCommandHelp,
  ];
  const commands = context.admin ? [...everyone, ...adminCommands] : everyone;
  return [
    `🤖 mediagate, profile "${context.profile}" (${agentName}).`,
    ...agentLines(context.agent),
    ...fileLines(context),
    ...groupLine(context),
    "",
    context.admin ? "Commands (you are an admin):" : "Commands:",
    ...commands.map((line) => `  ${line}`),
  ].join("\n");
}
