/**
 * Usage records and their totals (docs/models-and-usage.md, "Usage"). Days are UTC days,
 * `YYYY-MM-DD`: "today", the budget's day and the chart's bars all turn at 00:00 UTC.
 */

/** One model call, as recorded. */
export interface UsageRecord {
  readonly sessionKey: string;
  readonly sessionId: string;
  /** `<platform>:<id>` of the user whose message the call answered; absent when unknown. */
  readonly user?: string | undefined;
  /** The `agent.models` entry's name. */
  readonly model: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  /** From the entry's prices (0 without). */
  readonly cost: number;
}

/** Sums over some model calls. */
export interface UsageTotals {
  readonly calls: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly cachedTokens: number;
  readonly cost: number;
}

/** Totals for today, the last `Defaults.models.weekDays` days (today included) and all time. */
export interface UsagePeriods {
  readonly today: UsageTotals;
  readonly week: UsageTotals;
  readonly all: UsageTotals;
}

/** One day's totals (the web console's chart). */
export interface DailyUsage extends UsageTotals {
  readonly day: string;
}

/** One user's totals (`mediagate usage`). */
export interface UserUsage extends UsagePeriods {
  /** `<platform>:<id>`, or `"unknown"` for calls recorded without one. */
  readonly user: string;
}

/** Which calls to sum: all of the profile's, one session's, or one user's. */
export type UsageScope =
  | { readonly kind: "profile" }
  | { readonly kind: "session"; readonly sessionKey: string }
  | { readonly kind: "user"; readonly user: string };

/** The days a usage query is relative to, computed on the caller's clock. */
export interface UsageDays {
  readonly today: string;
  /** The first day of the week period. */
  readonly weekStart: string;
}

export const NoUsage: UsageTotals = {
  calls: 0,
  inputTokens: 0,
  outputTokens: 0,
  cachedTokens: 0,
  cost: 0,
};

const DayMs = 86_400_000;

/** The UTC day of `ms`, `YYYY-MM-DD`. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Today and the first of the `days` days ending today, by UTC. */
export function usageDays(nowMs: number, days: number): UsageDays {
  return { today: utcDay(nowMs), weekStart: utcDay(nowMs - (days - 1) * DayMs) };
}

/** The next 00:00 UTC after `nowMs`: when a daily budget resets. */
export function nextUtcMidnight(nowMs: number): number {
  return (Math.floor(nowMs / DayMs) + 1) * DayMs;
}

/** The `days` UTC days ending with `nowMs`'s, oldest first. */
export function lastDays(nowMs: number, days: number): string[] {
  return Array.from({ length: days }, (_, index) => utcDay(nowMs - (days - 1 - index) * DayMs));
}
