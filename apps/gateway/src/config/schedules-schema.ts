import ms from "ms";
import { z } from "zod";
import { Defaults } from "../defaults.js";
import {
  checkCron,
  isTimeZone,
  parseAt,
  parseEvery,
  shortestGapMs,
  TimingError,
} from "../schedules/timing.js";
import { timerSeconds } from "./durations.js";
import type { OperatorTaskSettings, ScheduleSettings } from "./types.js";

const positiveInt = z.number().int().positive({ error: "a positive whole number" });

const timezone = z.string().refine(isTimeZone, {
  error: 'an IANA time zone, e.g. "Europe/Berlin", "America/New_York" or "UTC"',
});

const catchUp = z.enum(["once", "skip"], {
  error: 'what a due time missed while down does: "once" (run once after the start) or "skip"',
});

/** Adds `check`'s TimingError as an issue of `path`. */
function timingIssue(ctx: z.RefinementCtx, path: string, check: () => void): void {
  try {
    check();
  } catch (error) {
    if (!(error instanceof TimingError)) throw error;
    ctx.addIssue({ code: "custom", path: [path], message: error.message });
  }
}

const taskSchema = z
  .strictObject({
    name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,35}$/, {
      error: "a name of lower-case letters, digits and dashes (at most 36), e.g. daily-report",
    }),
    every: z.string().optional(),
    cron: z.string().optional(),
    at: z.string().optional(),
    text: z.string().trim().min(1, { error: "the prompt or command each run sends" }),
    chat: z.strictObject({
      platform: z.enum(["telegram", "discord"], { error: '"telegram" or "discord"' }),
      chatId: z.union([z.string().min(1), z.number().int()]).transform(String),
      type: z.enum(["dm", "group", "channel"]).optional(),
      threadId: z
        .union([z.string().min(1), z.number().int()])
        .transform(String)
        .optional(),
    }),
    catchUp: catchUp.optional(),
    timezone: timezone.optional(),
  })
  .superRefine((task, ctx) => {
    const given = [task.every, task.cron, task.at].filter((t) => t !== undefined).length;
    if (given !== 1) {
      ctx.addIssue({
        code: "custom",
        message: 'exactly one of every ("1h"), cron ("0 9 * * 1-5") or at ("2026-12-24 09:00")',
      });
      return;
    }
    const zone = task.timezone ?? "UTC";
    if (task.every !== undefined) timingIssue(ctx, "every", () => parseEvery(task.every ?? ""));
    if (task.cron !== undefined) timingIssue(ctx, "cron", () => checkCron(task.cron ?? "", zone));
    if (task.at !== undefined && !/^\d{4}-\d{2}-\d{2}[ T]\d{1,2}:\d{2}$/.test(task.at)) {
      ctx.addIssue({
        code: "custom",
        path: ["at"],
        message: 'a date and time, "2026-12-24 09:00"',
      });
    }
  });

/**
 * `schedules` of a profile (docs/schedules.md): the zone and limits of chat tasks, and the
 * operator's own `tasks`, each with the chat its runs are answered in.
 */
export const schedulesSchema = z
  .strictObject({
    timezone: timezone.optional(),
    userTimezones: z.record(z.string(), timezone).optional(),
    maxPerUser: z.number().int().min(0, { error: "a whole number, 0 or more" }).optional(),
    maxPerProfile: z.number().int().min(0, { error: "a whole number, 0 or more" }).optional(),
    minIntervalSeconds: positiveInt.optional(),
    runTimeoutSeconds: timerSeconds().optional(),
    catchUp: catchUp.optional(),
    tasks: z.array(taskSchema).optional(),
  })
  .superRefine((schedules, ctx) => {
    const names = (schedules.tasks ?? []).map((task) => task.name);
    const twice = names.find((name, index) => names.indexOf(name) !== index);
    if (twice !== undefined)
      ctx.addIssue({ code: "custom", path: ["tasks"], message: `two tasks are named ${twice}` });
    checkMinInterval(schedules, ctx);
  });

/**
 * The operator's tasks are held to `minIntervalSeconds` as chat tasks are: one that would run
 * more often is refused at load, naming the task, its gap and the limit.
 */
function checkMinInterval(
  schedules: {
    readonly timezone?: string | undefined;
    readonly minIntervalSeconds?: number | undefined;
    readonly tasks?: readonly z.infer<typeof taskSchema>[] | undefined;
  },
  ctx: z.RefinementCtx,
): void {
  const minSeconds = schedules.minIntervalSeconds ?? Defaults.schedules.minIntervalSeconds;
  const nowMs = Date.now();
  for (const [index, task] of (schedules.tasks ?? []).entries()) {
    let gapMs: number | undefined;
    try {
      if (task.every !== undefined) gapMs = parseEvery(task.every);
      else if (task.cron !== undefined) {
        const zone = task.timezone ?? schedules.timezone ?? Defaults.schedules.timezone;
        gapMs = shortestGapMs({ kind: "cron", pattern: task.cron }, zone, nowMs);
      }
    } catch {
      continue; // its timing's own issue says what is wrong
    }
    if (gapMs === undefined || gapMs >= minSeconds * 1000) continue;
    ctx.addIssue({
      code: "custom",
      path: ["tasks", index, task.every !== undefined ? "every" : "cron"],
      message: `task ${task.name} would run every ${ms(gapMs, { long: true })}, more often than minIntervalSeconds (${minSeconds} s) allows: give it a longer interval, or lower schedules.minIntervalSeconds`,
    });
  }
}

/** The `schedules` of a profile as written, with the `Defaults.schedules` filled in. */
export function resolveSchedules(
  raw: z.infer<typeof schedulesSchema> | undefined,
): ScheduleSettings {
  const entry = raw ?? {};
  const zone = entry.timezone ?? Defaults.schedules.timezone;
  const catchUpDefault = entry.catchUp ?? Defaults.schedules.catchUp;
  const tasks = (entry.tasks ?? []).map(
    (task): OperatorTaskSettings => ({
      name: task.name,
      timing:
        task.every !== undefined
          ? { kind: "every", everyMs: parseEvery(task.every) }
          : task.cron !== undefined
            ? { kind: "cron", pattern: task.cron }
            : { kind: "at", at: task.at ?? "" },
      text: task.text,
      chat: {
        platform: task.chat.platform,
        chatId: task.chat.chatId,
        chatType: task.chat.type ?? "group",
        ...(task.chat.threadId === undefined ? {} : { threadId: task.chat.threadId }),
      },
      catchUp: task.catchUp ?? catchUpDefault,
      timezone: task.timezone ?? zone,
    }),
  );
  return {
    timezone: zone,
    userTimezones: entry.userTimezones ?? {},
    maxPerUser: entry.maxPerUser ?? Defaults.schedules.maxPerUser,
    maxPerProfile: entry.maxPerProfile ?? Defaults.schedules.maxPerProfile,
    minIntervalSeconds: entry.minIntervalSeconds ?? Defaults.schedules.minIntervalSeconds,
    runTimeoutSeconds: entry.runTimeoutSeconds ?? Defaults.schedules.runTimeoutSeconds,
    catchUp: catchUpDefault,
    tasks,
  };
}

/** A config task's `at` as epoch ms (it is read in the task's zone). */
export function operatorAtMs(at: string, timezone: string, nowMs: number): number | undefined {
  try {
    return parseAt(at, timezone, nowMs);
  } catch {
    return undefined;
  }
}
