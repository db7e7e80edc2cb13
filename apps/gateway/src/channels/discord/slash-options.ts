import { ApplicationCommandOptionType, type CommandInteractionOption } from "discord.js";
import type { MenuCommand } from "../../commands/menu.js";

/** A slash command's options as read: the boolean options chosen, or why they cannot be read. */
export type SlashOptions =
  | { readonly ok: true; readonly chosen: ReadonlySet<string> }
  | { readonly ok: false; readonly problem: string };

/** What Discord sent instead of True or False, for the user (never the value itself). */
const SentInstead: Readonly<Partial<Record<ApplicationCommandOptionType, string>>> = {
  [ApplicationCommandOptionType.String]: "text",
  [ApplicationCommandOptionType.Integer]: "a whole number",
  [ApplicationCommandOptionType.Number]: "a number",
  [ApplicationCommandOptionType.User]: "a user",
  [ApplicationCommandOptionType.Channel]: "a channel",
  [ApplicationCommandOptionType.Role]: "a role",
  [ApplicationCommandOptionType.Mentionable]: "a mention",
  [ApplicationCommandOptionType.Attachment]: "a file",
};

/** Discord's longest option name; a longer one is cut in the answer. */
const MaxOptionName = 32;

/**
 * Reads a slash command's options without trusting them to be the ones this gateway
 * registers: Discord sends what the bot's *registered* commands declare, which may be
 * another program's (`discord.commands.register: false`) or an older registration. Every
 * option of a {@link MenuCommand} is an optional boolean, so a missing one is false; anything
 * else is a problem, said in words for the user: a subcommand, an option the command does
 * not have, an option that is not True or False. Values are never quoted (another program's
 * option may carry a secret).
 */
export function readSlashOptions(
  command: MenuCommand,
  data: readonly CommandInteractionOption[],
): SlashOptions {
  const chosen = new Set<string>();
  for (const option of data) {
    const name = `"${String(option.name).slice(0, MaxOptionName)}"`;
    if (
      option.type === ApplicationCommandOptionType.Subcommand ||
      option.type === ApplicationCommandOptionType.SubcommandGroup
    ) {
      return { ok: false, problem: `/${command.name} has no subcommand ${name}` };
    }
    if (!(command.options ?? []).some((known) => known.name === option.name)) {
      return { ok: false, problem: `/${command.name} has no option ${name}` };
    }
    if (option.type !== ApplicationCommandOptionType.Boolean || typeof option.value !== "boolean") {
      const sent =
        option.value === undefined || option.value === null
          ? "no value"
          : (SentInstead[option.type] ?? "something else");
      return {
        ok: false,
        problem: `the option ${name} of /${command.name} must be True or False, and Discord sent ${sent}`,
      };
    }
    if (option.value) chosen.add(option.name);
  }
  return { ok: true, chosen };
}

/**
 * The answer to a slash command whose options could not be read: what was wrong, why it
 * can happen, and how to run the command anyway (typed as a message).
 */
export function unreadableOptionsText(command: MenuCommand, problem: string): string {
  const typed = [
    `/${command.name}`,
    ...(command.options ?? []).map((option) => `/${command.name} ${option.name}`),
  ];
  return [
    `⚠️ Not run: ${problem}.`,
    "The slash commands Discord has for this bot are not the ones this gateway registers (another program's, or an older registration).",
    `Type the command as a message instead: ${typed.join(" or ")}.`,
  ].join("\n");
}
