import { ApplicationCommandOptionType, type CommandInteractionOption } from "discord.js";
import type { MenuCommand } from "../../commands/menu.js";

/**
 * A slash command's options as read: each given option's value (a flag's true or false, a
 * text option's words), or why they cannot be read.
 */
export type SlashOptions =
  | { readonly ok: true; readonly chosen: ReadonlyMap<string, boolean | string> }
  | { readonly ok: false; readonly problem: string };

/** What Discord sent instead of the option's kind, for the user (never the value itself). */
const SentInstead: Readonly<Partial<Record<ApplicationCommandOptionType, string>>> = {
  [ApplicationCommandOptionType.String]: "text",
  [ApplicationCommandOptionType.Boolean]: "True or False",
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
 * another program's (`discord.commands.register: false`) or an older registration. A
 * {@link MenuCommand}'s flags are optional True/False (a missing one is false) and its text
 * options strings; anything else is a problem, said in words for the user: a subcommand, an
 * option the command does not have, a value of the wrong kind. Values are never quoted
 * (another program's option may carry a secret).
 */
export function readSlashOptions(
  command: MenuCommand,
  data: readonly CommandInteractionOption[],
): SlashOptions {
  const chosen = new Map<string, boolean | string>();
  for (const option of data) {
    const name = `"${String(option.name).slice(0, MaxOptionName)}"`;
    if (
      option.type === ApplicationCommandOptionType.Subcommand ||
      option.type === ApplicationCommandOptionType.SubcommandGroup
    ) {
      return { ok: false, problem: `/${command.name} has no subcommand ${name}` };
    }
    const known = (command.options ?? []).find((candidate) => candidate.name === option.name);
    if (known === undefined) {
      return { ok: false, problem: `/${command.name} has no option ${name}` };
    }
    const text = (known.kind ?? "flag") === "text";
    const fits = text
      ? option.type === ApplicationCommandOptionType.String && typeof option.value === "string"
      : option.type === ApplicationCommandOptionType.Boolean && typeof option.value === "boolean";
    if (!fits) {
      const sent =
        option.value === undefined || option.value === null
          ? "no value"
          : (SentInstead[option.type] ?? "something else");
      return {
        ok: false,
        problem: `the option ${name} of /${command.name} must be ${text ? "text" : "True or False"}, and Discord sent ${sent}`,
      };
    }
    chosen.set(option.name, option.value as boolean | string);
  }
  return { ok: true, chosen };
}

/**
 * The answer to a slash command whose options could not be read: what was wrong, why it
 * can happen, and how to run the command anyway (typed as a message).
 */
export function unreadableOptionsText(command: MenuCommand, problem: string): string {
  const options = command.options ?? [];
  const texts = options.filter((option) => option.kind === "text");
  const words = texts.map((option) =>
    option.quoted === true ? `"<${option.name}>"` : `<${option.name}>`,
  );
  const typed = [
    ...(texts.some((option) => option.required === true) ? [] : [`/${command.name}`]),
    ...options
      .filter((option) => (option.kind ?? "flag") === "flag")
      .map((option) => `/${command.name} ${option.name}`),
    ...(texts.length === 0 ? [] : [[`/${command.name}`, ...words].join(" ")]),
  ];
  return [
    `⚠️ Not run: ${problem}.`,
    "The slash commands Discord has for this bot are not the ones this gateway registers (another program's, or an older registration).",
    `Type the command as a message instead: ${typed.join(" or ")}.`,
  ].join("\n");
}
