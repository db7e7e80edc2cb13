/**
 * The command menus registered with the platforms at start-up (docs/sessions.md, "Command
 * menus"). They only advertise: whoever sends a command, typed or picked from a menu, goes
 * through the same gating as a text command (`pipeline/commands.ts`).
 */

/** A boolean option of a Discord slash command; `true` appends its name to the text command. */
export interface MenuOption {
  readonly name: string;
  readonly description: string;
}

/** One command of the menus. */
export interface MenuCommand {
  /** Without the slash; lowercase, as both platforms require. */
  readonly name: string;
  /** At most 100 characters (Discord's limit; Telegram allows 256). */
  readonly description: string;
  /** Only admins may use it (everyone allowed may use the others). */
  readonly admin: boolean;
  /** Discord's slash command options (Telegram's menu has none: the user types the word). */
  readonly options?: readonly MenuOption[];
}

/**
 * The commands, in menu order: `/help`, `/new` and `/compact` for everyone allowed, `/status`,
 * `/stop` and `/reset` for admins (`/compact`'s focus is typed: `/compact <focus>`). `/start` is not listed: Telegram's own Start button sends it, and it answers what
 * `/help` answers.
 */
export const MenuCommands: readonly MenuCommand[] = [
  { name: "help", description: "What this bot is, how to send files, your commands", admin: false },
  {
    name: "new",
    description: "Start a new conversation; the sandbox and its files stay",
    admin: false,
  },
  {
    name: "compact",
    description: "Summarize the older messages of this conversation now",
    admin: false,
  },
  { name: "status", description: "This session, its sandbox container and queue", admin: true },
  {
    name: "stop",
    description: "Abort the running command, kill what this session started",
    admin: true,
    options: [{ name: "all", description: "Stop every session on this sandbox container" }],
  },
  {
    name: "reset",
    description: "Stop, then a new conversation and a fresh sandbox",
    admin: true,
    options: [{ name: "confirm", description: "Go ahead when the container is shared" }],
  },
];

/**
 * `/approve CODE` (docs/security.md, "Pairing"): in the Telegram admin menu of a profile that
 * pairs. It takes a typed code, so it is not one of Discord's slash commands: there an admin
 * types `/approve CODE` as a message.
 */
export const ApproveMenuCommand: MenuCommand = {
  name: "approve",
  description: "Let the user who got this pairing code use the bot",
  admin: true,
};

/** The commands a user of that role sees in the menu; `pairing` adds `/approve` for admins. */
export function menuFor(admin: boolean, pairing = false): readonly MenuCommand[] {
  const commands = MenuCommands.filter((command) => admin || !command.admin);
  return admin && pairing ? [...commands, ApproveMenuCommand] : commands;
}

/** The command of {@link MenuCommands} named `name` (without the slash); `undefined` for others. */
export function menuCommandNamed(name: string): MenuCommand | undefined {
  return MenuCommands.find((candidate) => candidate.name === name);
}

/**
 * The text command a pick of `command` stands for, as `parseCommand` reads it: `/stop` with
 * `all` chosen is `/stop all`.
 */
export function commandText(command: MenuCommand, chosen: (option: string) => boolean): string {
  const words = (command.options ?? []).filter((option) => chosen(option.name));
  return [`/${command.name}`, ...words.map((option) => option.name)].join(" ");
}
