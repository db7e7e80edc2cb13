import { safeHead } from "../agents/tools-text.js";
import { printable } from "../printable.js";
import { isTaskCommand } from "../schedules/parse.js";

/** The admin commands the gateway handles itself, ahead of the session queue. */
export type AdminCommand =
  | { readonly name: "stop"; readonly all: boolean }
  | { readonly name: "reset"; readonly confirm: boolean }
  | { readonly name: "status" }
  /**
   * `/approve CODE` (pairing, docs/security.md): the code as typed, absent when none was given.
   * Only a command in a profile with `access: pairing`; elsewhere the text goes to the agent.
   */
  | { readonly name: "approve"; readonly code?: string | undefined };

/**
 * `/help`, and `/start` (what Telegram sends when someone opens the bot): for every allowed
 * user (docs/sessions.md, "First contact and help").
 */
export interface HelpCommand {
  readonly name: "help";
  /** Sent as `/start`. */
  readonly start: boolean;
}

/**
 * `/model [name]` and `/usage` (docs/models-and-usage.md): for every allowed user of an
 * `openai` profile; what they show and allow depends on the user's role.
 */
export type ModelCommand =
  | { readonly name: "model"; readonly choice?: string | undefined }
  | { readonly name: "usage" };

/**
 * `/allow`, `/allow session`, `/deny` (docs/approvals.md): the typed answers to the chat's
 * newest pending approval, for whoever may decide it.
 */
export type ApprovalCommand =
  | { readonly name: "allow"; readonly session: boolean }
  | { readonly name: "deny" };

/**
 * `/new` and `/compact [focus]`: for every allowed user, on their own session's conversation
 * (docs/sessions.md, "New conversation and compaction"). The focus is the rest of the line.
 */
export type ConversationCommand =
  | { readonly name: "new" }
  | { readonly name: "compact"; readonly focus?: string | undefined };

/** Every command the gateway answers itself. */
export type Command =
  | AdminCommand
  | HelpCommand
  | ModelCommand
  | ApprovalCommand
  | ConversationCommand;

/**
 * Recognizes `/stop`, `/stop all`, `/reset`, `/reset confirm`, `/status`, `/approve [code]`,
 * `/model [name]`, `/usage`, `/allow [session]`, `/deny`, `/new`, `/compact [focus]`, `/help`
 * and `/start`
 * (case-insensitive, with an optional Telegram `@botname` suffix). `/start` and `/help` take
 * any words after them (Telegram's deep links send `/start <payload>`); they are ignored.
 * Anything else — other slash commands included — is a message for the agent.
 */
export function parseCommand(text: string): Command | undefined {
  const trimmed = text.trim();
  const help = /^\/(help|start)(?:@[A-Za-z0-9_]+)?(?:\s|$)/i.exec(trimmed);
  if (help !== null) return { name: "help", start: help[1]!.toLowerCase() === "start" };
  const model = /^\/(model|usage)(?:@[A-Za-z0-9_]+)?(?:\s+(\S+))?\s*$/i.exec(trimmed);
  if (model !== null) {
    if (model[1]!.toLowerCase() === "usage")
      return model[2] === undefined ? { name: "usage" } : undefined;
    return model[2] === undefined ? { name: "model" } : { name: "model", choice: model[2] };
  }
  const approve = /^\/approve(?:@[A-Za-z0-9_]+)?(?:\s+(.*\S))?\s*$/i.exec(trimmed);
  if (approve !== null) {
    return approve[1] === undefined ? { name: "approve" } : { name: "approve", code: approve[1] };
  }
  const decision = /^\/(allow|deny)(?:@[A-Za-z0-9_]+)?(?:\s+(session))?\s*$/i.exec(trimmed);
  if (decision !== null) {
    if (decision[1]!.toLowerCase() === "deny")
      return decision[2] === undefined ? { name: "deny" } : undefined;
    return { name: "allow", session: decision[2] !== undefined };
  }
  const compact = /^\/compact(?:@[A-Za-z0-9_]+)?(?:\s+([\s\S]*\S))?\s*$/i.exec(trimmed);
  if (compact !== null) {
    return compact[1] === undefined ? { name: "compact" } : { name: "compact", focus: compact[1] };
  }
  if (/^\/new(?:@[A-Za-z0-9_]+)?$/i.test(trimmed)) return { name: "new" };
  const match = /^\/(stop|reset|status)(?:@[A-Za-z0-9_]+)?(?:\s+(\S+))?\s*$/i.exec(trimmed);
  if (match === null) return undefined;
  const name = match[1]!.toLowerCase();
  const arg = match[2]?.toLowerCase();
  if (name === "reset") {
    if (arg !== undefined && arg !== "confirm") return undefined;
    return { name, confirm: arg === "confirm" };
  }
  if (name === "stop") {
    if (arg !== undefined && arg !== "all") return undefined;
    return { name, all: arg === "all" };
  }
  if (arg !== undefined) return undefined;
  return { name: "status" };
}

/**
 * The longest typed `/model` name shown, in the answer or a log line (config names are at most
 * 64 characters); a longer one (up to a message's 4,096) is cut, never inside a surrogate
 * pair: Telegram refuses a text with half of one, and the answer would be lost.
 */
export const MaxShownChoiceChars = 64;

/**
 * What a log line may say of a command: its name and its arguments, except those that are
 * secrets (the pairing code of `/approve`, docs/security.md "Pairing": codes are never
 * logged), which show only whether one was given. A `/model` name shows with its controls
 * escaped; one longer than {@link MaxShownChoiceChars}, its head and its length.
 */
export function commandLogFields(command: Command): Record<string, unknown> {
  switch (command.name) {
    case "approve":
      return { name: command.name, codeGiven: command.code !== undefined };
    case "stop":
      return { name: command.name, all: command.all };
    case "reset":
      return { name: command.name, confirm: command.confirm };
    case "help":
      return { name: command.name, start: command.start };
    case "status":
    case "usage":
      return { name: command.name };
    case "model":
      return command.choice === undefined
        ? { name: command.name }
        : {
            name: command.name,
            choice: printable(safeHead(command.choice, MaxShownChoiceChars)),
            ...(command.choice.length > MaxShownChoiceChars
              ? { choiceChars: command.choice.length }
              : {}),
          };
    case "deny":
      return { name: command.name };
    case "allow":
      return { name: command.name, session: command.session };
    case "new":
      return { name: command.name };
    case "compact":
      return { name: command.name, focusGiven: command.focus !== undefined };
  }
}

/**
 * A gateway command (the task commands too, docs/schedules.md) sent bare (no mention, no `@bot`)
 * in a group or guild channel counts as addressed to the bot (docs/sessions.md, "Groups"); `/approve` does not (it was an ordinary
 * message before pairing, and still is in an allowlist profile): `/approve@bot CODE`. Nor do
 * `/model` and `/usage` under the `shell` agent, whose profile hands them to its shell (they are
 * the gateway's in an `openai` profile only): there they are another bot's, like `/uptime`.
 */
export function isBareGroupCommand(text: string, agent: "shell" | "openai"): boolean {
  if (isTaskCommand(text)) return true;
  const command = parseCommand(text);
  if (command === undefined || command.name === "approve") return false;
  return agent === "openai" || (command.name !== "model" && command.name !== "usage");
}
