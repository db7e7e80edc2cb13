import { MediagateError } from "@mediagate/io";
import { Cron } from "croner";
import ms from "ms";
import { Defaults } from "../defaults.js";
import type { TaskTiming } from "../state/tasks.js";

/**
 * When tasks are due (docs/schedules.md, "Timing"). Cron patterns and wall-clock times are read
 * in the task's IANA time zone by croner, which handles daylight saving as Vixie cron does: a
 * fixed time that happens twice (clocks go back) runs once, at its first occurrence; one that
 * does not exist (clocks go forward) runs right after the gap, that day. `every` intervals are
 * counted from the task's anchor in real time, so they never drift and ignore the zone.
 */

/** Why a timing was refused: the message says what to write instead. */
export class TimingError extends MediagateError {
  override readonly name = "TimingError";
  readonly code = "MG_TASK_TIMING_INVALID";
}

/** Whether `zone` is an IANA time zone this Node knows. */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

const MaxEveryMs = Defaults.schedules.maxIntervalDays * 24 * 60 * 60 * 1000;

/**
 * Reads `/every`'s interval (`30m`, `1h`, `2d`, `90s`; the `ms` grammar) into milliseconds, at
 * most `Defaults.schedules.maxIntervalDays`.
 */
export function parseEvery(text: string): number {
  const trimmed = text.trim();
  const millis: number | undefined = /^\d+(\.\d+)?\s*[a-z]+$/i.test(trimmed)
    ? ms(trimmed as ms.StringValue)
    : undefined;
  if (millis === undefined || !Number.isFinite(millis) || millis <= 0) {
    throw new TimingError(`"${text}" is not an interval: write e.g. 30m, 1h or 1d`);
  }
  if (millis > MaxEveryMs) {
    throw new TimingError(
      `"${text}" is longer than an interval may be (${Defaults.schedules.maxIntervalDays} days): for something that rare, use /at with a date or a yearly /cron`,
    );
  }
  return Math.round(millis);
}

function cron(pattern: string, timezone: string): Cron {
  return new Cron(pattern, { timezone, mode: "5-part" });
}

/** Checks a five-field cron pattern; throws {@link TimingError} saying what is wrong. */
export function checkCron(pattern: string, timezone: string): void {
  try {
    if (cron(pattern, timezone).nextRun() === null) throw new Error("it never matches a date");
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new TimingError(
      `"${pattern}" is not a cron pattern of five fields (minute hour day month weekday), e.g. "0 9 * * 1-5": ${reason}`,
    );
  }
}

const Clock = /^([01]?\d|2[0-3]):([0-5]\d)$/;
const DateAndClock = /^(\d{4})-(\d{2})-(\d{2})[ T]([01]?\d|2[0-3]):([0-5]\d)$/;

/**
 * Reads `/at`'s time: `HH:MM` (the next time the clock in `timezone` shows it, today or
 * tomorrow) or `YYYY-MM-DD HH:MM` (that day), into epoch ms after `nowMs`. A time in the past
 * is refused.
 */
export function parseAt(text: string, timezone: string, nowMs: number): number {
  const trimmed = text.trim();
  const clock = Clock.exec(trimmed);
  if (clock !== null) {
    const next = cron(`${Number(clock[2])} ${Number(clock[1])} * * *`, timezone).nextRun(
      new Date(nowMs),
    );
    if (next !== null) return next.getTime();
  }
  const dated = DateAndClock.exec(trimmed);
  if (dated !== null) {
    const [, year, month, day, hour, minute] = dated;
    const local = `${year}-${month}-${day}T${hour!.padStart(2, "0")}:${minute}:00`;
    let next: Date | null;
    try {
      next = new Cron(local, { timezone }).nextRun(new Date(nowMs));
    } catch {
      throw new TimingError(`"${text}" is not a date: write e.g. 2026-12-24 09:00`);
    }
    if (next === null) throw new TimingError(`${trimmed} (${timezone}) has passed`);
    return next.getTime();
  }
  throw new TimingError(`"${text}" is not a time: write e.g. 09:00 or 2026-12-24 09:00`);
}

/**
 * The first due time of `timing` strictly after `afterMs`; `undefined` when there is none (a
 * one-time task's time has passed). `anchorMs` is where `every` counts from.
 */
export function nextDueAfter(
  timing: TaskTiming,
  timezone: string,
  anchorMs: number,
  afterMs: number,
): number | undefined {
  switch (timing.kind) {
    case "every": {
      // Both ways from the anchor: a wall clock stepped back before it still finds the grid.
      const steps = Math.floor((afterMs - anchorMs) / timing.everyMs) + 1;
      return anchorMs + steps * timing.everyMs;
    }
    case "at":
      return timing.atMs > afterMs ? timing.atMs : undefined;
    case "cron":
      return cron(timing.pattern, timezone).nextRun(new Date(afterMs))?.getTime();
  }
}

/**
 * The shortest gap between due times of `timing` (over its next `samples`): what the minimum
 * interval is checked against. `undefined` for a one-time task.
 */
export function shortestGapMs(
  timing: TaskTiming,
  timezone: string,
  fromMs: number,
  samples = 50,
): number | undefined {
  if (timing.kind === "every") return timing.everyMs;
  if (timing.kind === "at") return undefined;
  const runs = cron(timing.pattern, timezone).nextRuns(samples, new Date(fromMs));
  let shortest: number | undefined;
  for (let i = 1; i < runs.length; i++) {
    const gap = runs[i]!.getTime() - runs[i - 1]!.getTime();
    shortest = shortest === undefined ? gap : Math.min(shortest, gap);
  }
  return shortest;
}

/** How a timing reads in a list: `every 1h`, `at 2026-12-24 09:00`, `cron 0 9 * * 1-5`. */
export function describeTiming(timing: TaskTiming, timezone: string): string {
  switch (timing.kind) {
    case "every":
      return `every ${ms(timing.everyMs, { long: false })}`;
    case "at":
      return `once at ${formatLocal(timing.atMs, timezone)}`;
    case "cron":
      return `cron "${timing.pattern}" (${timezone})`;
  }
}

/** `YYYY-MM-DD HH:MM` in `timezone`, with the zone's name. */
export function formatLocal(atMs: number, timezone: string): string {
  const parts = new Intl.DateTimeFormat("en-CA", {
    timeZone: timezone,
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    hourCycle: "h23",
  }).formatToParts(new Date(atMs));
  const part = (type: string) => parts.find((p) => p.type === type)?.value ?? "";
  return `${part("year")}-${part("month")}-${part("day")} ${part("hour")}:${part("minute")} ${timezone}`;
}
