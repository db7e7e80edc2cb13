/**
 * The task commands every allowed user finds in the menus (docs/schedules.md), in menu order:
 * after the user's own commands, before the admins'. Written out here, not imported, so the
 * menu tests fail when the gateway's menus change.
 */
export const TaskCommands = ["every", "at", "cron", "tasks", "tz"] as const;
