/**
 * The task commands (docs/schedules.md): `/every <interval> <text>`, `/at <time> <text>`,
 * `/cron "<pattern>" <text>`, `/tasks`, `/tasks pause|resume|run|delete <id>`, and `/tz
 * [zone|reset]`, the sender's own time zone. Parsed here,
 * apart from the gateway's other commands; the text after the timing is what each run sends.
 */

/** A task action, by button or typed: `run` is "Run now". */
export type TaskAction = "pause" | "resume" | "run" | "delete";

export type TaskCommand =
  | { readonly name: "every"; readonly interval: string; readonly text: string }
  | { readonly name: "at"; readonly time: string; readonly text: string }
  | { readonly name: "cron"; readonly pattern: string; readonly text: string }
  | { readonly name: "tasks" }
  | { readonly name: "task_action"; readonly action: TaskAction; readonly id: string }
  /** `/tz`: shows the sender's zone; `/tz <zone>` sets it, `/tz reset` forgets it. */
  | { readonly name: "tz"; readonly zone: string | undefined }
  /** A task command written wrong: `usage` says how to write it. */
  | { readonly name: "invalid"; readonly usage: string };

/** The task commands' names, without the slash (the menus list them: commands/menu.ts). */
export const TaskCommandNames = ["every", "at", "cron", "tasks", "tz"] as const;

type TaskCommandName = (typeof TaskCommandNames)[number];

const Head = /^\/(every|at|cron|tasks|tz)(?:@[A-Za-z0-9_]+)?(?=\s|$)\s*([\s\S]*)$/i;

export const TaskUsage = {
  every: "Write /every <interval> <prompt or command>, e.g. /every 1h check the disk",
  at: "Write /at <HH:MM or YYYY-MM-DD HH:MM> <prompt or command>, e.g. /at 09:00 remind me of the call",
  cron: 'Write /cron "<minute hour day month weekday>" <prompt or command>, e.g. /cron "0 9 * * 1-5" daily report',
  tasks: "Write /tasks, or /tasks pause|resume|run|delete <id>",
  tz: "Write /tz to see your time zone, /tz <zone> to set it (e.g. /tz Europe/Berlin), /tz reset to use the bot's",
} as const satisfies Record<TaskCommandName, string>;

/** Whether `text` starts with a task command (a task's own text may not). */
export function isTaskCommand(text: string): boolean {
  return Head.test(text.trim());
}

/** The task command in `text`, or `undefined` when it is none. */
export function parseTaskCommand(text: string): TaskCommand | undefined {
  const match = Head.exec(text.trim());
  if (match === null) return undefined;
  const name = match[1]!.toLowerCase() as TaskCommandName;
  const rest = match[2]!.trim();
  const invalid = { name: "invalid", usage: TaskUsage[name] } as const;
  if (name === "tz") {
    if (rest === "") return { name, zone: undefined };
    return /^\S+$/.test(rest) ? { name, zone: rest } : invalid;
  }
  if (name === "tasks") {
    if (rest === "") return { name: "tasks" };
    const action = /^(pause|resume|run|delete)\s+([A-Za-z0-9_-]{1,40})$/i.exec(rest);
    if (action === null) return invalid;
    return {
      name: "task_action",
      action: action[1]!.toLowerCase() as TaskAction,
      id: action[2]!,
    };
  }
  if (name === "cron") {
    const quoted = /^["“”']([^"“”']+)["“”']\s+([\s\S]*\S)$/.exec(rest);
    if (quoted === null) return invalid;
    return { name, pattern: quoted[1]!.trim().replace(/\s+/g, " "), text: quoted[2]! };
  }
  if (name === "at") {
    const dated = /^(\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2})\s+([\s\S]*\S)$/.exec(rest);
    if (dated !== null) return { name, time: dated[1]!, text: dated[2]! };
  }
  const split = /^(\S+)\s+([\s\S]*\S)$/.exec(rest);
  if (split === null) return invalid;
  return name === "every"
    ? { name, interval: split[1]!, text: split[2]! }
    : { name, time: split[1]!, text: split[2]! };
}
