import type { ProfileConfig } from "../config/types.js";

/**
 * The command menus registered with the platforms at start-up (docs/sessions.md, "Command
 * menus"). They only advertise: whoever sends a command, typed or picked from a menu, goes
 * through the same gating as a text command (`pipeline/commands.ts`).
 */

/**
 * An option of a Discord slash command. A `flag` (the default) is an optional True/False whose
 * name is appended to the text command when True (`/stop` + all = `/stop all`); a `text` option's
 * value is appended (`/compact` + focus = `/compact <focus>`).
 */
export interface MenuOption {
  readonly name: string;
  readonly description: string;
  readonly kind?: "flag" | "text" | undefined;
  /** A `text` option Discord makes the user fill in (listed before the optional ones). */
  readonly required?: boolean | undefined;
  /** A `text` option appended in double quotes (`/cron`'s pattern: `/cron "0 9 * * *" …`). */
  readonly quoted?: boolean | undefined;
  /** The only values a `text` option offers (Discord shows them as a list to pick from). */
  readonly choices?: readonly string[] | undefined;
}

/** What a profile offers its users: it decides which commands its menus and `/help` list. */
export interface MenuOffer {
  /** The profile's agent: `/new`, `/compact`, `/model` and `/usage` are the `openai` agent's. */
  readonly agent: "shell" | "openai";
  /**
   * Who may answer the agent's approval questions with `/allow` and `/deny`
   * (docs/approvals.md): `sender` (whoever asked, so everyone allowed), `admins`, or
   * `undefined` when the profile's `agent.approvals` is `never` (nothing ever asks).
   */
  readonly approvers: "sender" | "admins" | undefined;
  /** `access: pairing`: admins get `/approve CODE`. */
  readonly pairing: boolean;
}

/** The offer of a profile nothing is known of: the shell agent, no approvals, no pairing. */
export const PlainOffer: MenuOffer = { agent: "shell", approvers: undefined, pairing: false };

/** What `profile` offers: its agent's kind, whether its approvals ask and who answers, pairing. */
export function menuOfferOf(profile: ProfileConfig): MenuOffer {
  const approvals = profile.agent.approvals;
  return {
    agent: profile.agent.kind,
    approvers:
      approvals === undefined || approvals.ask === "never" ? undefined : approvals.approvers,
    pairing: profile.access === "pairing",
  };
}

/** Who a command is for in a profile: everyone allowed, its admins only, or nobody (not offered). */
export type Audience = "everyone" | "admins" | "none";

/** One command of the menus. */
export interface MenuCommand {
  /** Without the slash; lowercase, as both platforms require. */
  readonly name: string;
  /** At most 100 characters (Discord's limit; Telegram allows 256). */
  readonly description: string;
  /** Who the profile offers it to. */
  readonly audience: (offer: MenuOffer) => Audience;
  /** Discord's slash command options (Telegram's menu has none: the user types the words). */
  readonly options?: readonly MenuOption[];
}

const everyone = (): Audience => "everyone";

/** The prompt of a task command: what each run sends, as if its owner typed it. */
const taskText: MenuOption = {
  name: "prompt",
  description: "What each run sends, as if you typed it: a prompt or a command",
  kind: "text",
  required: true,
};
const admins = (): Audience => "admins";
const modelAgent = (offer: MenuOffer): Audience => (offer.agent === "openai" ? "everyone" : "none");
const approvers = (offer: MenuOffer): Audience =>
  offer.approvers === undefined ? "none" : offer.approvers === "admins" ? "admins" : "everyone";

/**
 * The commands, in menu order: `/help`; the `openai` agent's `/new`, `/compact [focus]`,
 * `/model`, `/usage`; `/allow [session]` and `/deny` where approvals ask; the task commands
 * `/every`, `/at`, `/cron`, `/tasks`, `/tz` (docs/schedules.md); the admins'
 * `/status`, `/stop [all]`, `/reset [confirm]`, and `/approve CODE` in a pairing profile.
 * `/start` is not listed: Telegram's own Start button sends it, and it answers what `/help`
 * answers. `/model <name>` is typed; a bare `/model` offers the models as buttons.
 */
export const MenuCommands: readonly MenuCommand[] = [
  {
    name: "help",
    description: "What this bot is, how to send files, your commands",
    audience: everyone,
  },
  {
    name: "new",
    description: "Start a new conversation; the sandbox and its files stay",
    audience: modelAgent,
  },
  {
    name: "compact",
    description: "Summarize the older messages of this conversation now",
    audience: modelAgent,
    options: [
      { name: "focus", description: "What the summary should keep (optional)", kind: "text" },
    ],
  },
  {
    name: "model",
    description: "This session's model; pick another from the buttons",
    audience: modelAgent,
  },
  {
    name: "usage",
    description: "Tokens and cost of this session (admins: of the profile too)",
    audience: modelAgent,
  },
  {
    name: "allow",
    description: "Allow the action waiting for approval here, once",
    audience: approvers,
    options: [{ name: "session", description: "Allow for the rest of this session" }],
  },
  { name: "deny", description: "Refuse the action waiting for approval here", audience: approvers },
  {
    name: "every",
    description: "Make a task that runs every interval (30m, 1h, 1d)",
    audience: everyone,
    options: [
      {
        name: "interval",
        description: "How often: 30m, 1h, 2d, …",
        kind: "text",
        required: true,
      },
      taskText,
    ],
  },
  {
    name: "at",
    description: "Make a task that runs once, at a time (09:00 or 2026-12-24 09:00)",
    audience: everyone,
    options: [
      {
        name: "time",
        description: "When: HH:MM (the next time the clock shows it) or YYYY-MM-DD HH:MM",
        kind: "text",
        required: true,
      },
      taskText,
    ],
  },
  {
    name: "cron",
    description: "Make a task by a cron pattern (minute hour day month weekday)",
    audience: everyone,
    options: [
      {
        name: "pattern",
        description: "Five fields, e.g. 0 9 * * 1-5 (at 9:00 on weekdays)",
        kind: "text",
        required: true,
        quoted: true,
      },
      taskText,
    ],
  },
  {
    name: "tasks",
    description: "Your scheduled tasks, with buttons to pause, run now and delete",
    audience: everyone,
    options: [
      {
        name: "action",
        description: "Do this to the task named by id (optional)",
        kind: "text",
        choices: ["pause", "resume", "run", "delete"],
      },
      { name: "id", description: "The task's id, as /tasks lists it", kind: "text" },
    ],
  },
  {
    name: "tz",
    description: "Your time zone for /at and /cron: shows it, or sets it (Europe/Berlin)",
    audience: everyone,
    options: [
      {
        name: "zone",
        description:
          "An IANA time zone, e.g. Europe/Berlin, America/New_York, UTC; reset: the bot's",
        kind: "text",
      },
    ],
  },
  {
    name: "status",
    description: "This session, its sandbox container and queue",
    audience: admins,
  },
  {
    name: "stop",
    description: "Abort the running command, kill what this session started",
    audience: admins,
    options: [{ name: "all", description: "Stop every session on this sandbox container" }],
  },
  {
    name: "reset",
    description: "Stop, then a new conversation and a fresh sandbox",
    audience: admins,
    options: [{ name: "confirm", description: "Go ahead when the container is shared" }],
  },
  {
    name: "approve",
    description: "Let the user who got this pairing code use the bot",
    audience: (offer) => (offer.pairing ? "admins" : "none"),
    options: [
      {
        name: "code",
        description: "The code the user got in a direct message",
        kind: "text",
        required: true,
      },
    ],
  },
];

/** The commands a user of that role sees in the menu of a profile that offers `offer`. */
export function menuFor(admin: boolean, offer: MenuOffer): readonly MenuCommand[] {
  return MenuCommands.filter((command) => {
    const audience = command.audience(offer);
    return audience === "everyone" || (audience === "admins" && admin);
  });
}

/** The command of {@link MenuCommands} named `name` (without the slash); `undefined` for others. */
export function menuCommandNamed(name: string): MenuCommand | undefined {
  return MenuCommands.find((candidate) => candidate.name === name);
}

/**
 * The text command a pick of `command` stands for, as `parseCommand` reads it: `/stop` with
 * `all` chosen is `/stop all`, `/compact` with the focus "the API" is `/compact the API`.
 * `value(option)` answers a flag's `true`/`false` and a text option's words; whitespace in
 * those (line breaks included) becomes single spaces, so the text stays one command line. A
 * `quoted` option is put in double quotes (`/cron` with the pattern `0 9 * * *` and the prompt
 * `report` is `/cron "0 9 * * *" report`).
 */
export function commandText(
  command: MenuCommand,
  value: (option: string) => boolean | string | undefined,
): string {
  const words: string[] = [];
  for (const option of command.options ?? []) {
    const given = value(option.name);
    if ((option.kind ?? "flag") === "flag") {
      if (given === true) words.push(option.name);
      continue;
    }
    const text = typeof given === "string" ? given.replace(/\s+/g, " ").trim() : "";
    if (text !== "") words.push(option.quoted === true ? `"${text}"` : text);
  }
  return [`/${command.name}`, ...words].join(" ");
}
