import type { Database } from "better-sqlite3";
import type {
  DailyUsage,
  UsageDays,
  UsagePeriods,
  UsageRecord,
  UsageScope,
  UsageTotals,
  UserUsage,
} from "./usage.js";
import { utcDay } from "./usage.js";

/**
 * The usage and model-choice tables (schema v6), read and written inside the state database's
 * worker thread; `StateDatabase` calls these within its error handling.
 */

const Sums = `count(*) AS calls, coalesce(sum(input_tokens), 0) AS inputTokens,
  coalesce(sum(output_tokens), 0) AS outputTokens, coalesce(sum(cached_tokens), 0) AS cachedTokens,
  coalesce(sum(cost), 0.0) AS cost`;

function periodSums(prefix: string): string {
  const of = (column: string, when: string) =>
    `coalesce(sum(CASE WHEN ${when} THEN ${column} END), 0)`;
  const period = (name: string, when: string) =>
    [
      `coalesce(sum(CASE WHEN ${when} THEN 1 END), 0) AS ${name}_calls`,
      `${of("input_tokens", when)} AS ${name}_input`,
      `${of("output_tokens", when)} AS ${name}_output`,
      `${of("cached_tokens", when)} AS ${name}_cached`,
      `${of("cost", when)} AS ${name}_cost`,
    ].join(", ");
  return `SELECT ${prefix}${period("today", "day = @today")}, ${period("week", "day >= @weekStart")}, ${period("all", "1")} FROM usage`;
}

type PeriodRow = Record<string, number>;

function totalsOf(row: PeriodRow, name: string): UsageTotals {
  return {
    calls: row[`${name}_calls`] ?? 0,
    inputTokens: row[`${name}_input`] ?? 0,
    outputTokens: row[`${name}_output`] ?? 0,
    cachedTokens: row[`${name}_cached`] ?? 0,
    cost: row[`${name}_cost`] ?? 0,
  };
}

function periodsOf(row: PeriodRow): UsagePeriods {
  return { today: totalsOf(row, "today"), week: totalsOf(row, "week"), all: totalsOf(row, "all") };
}

function where(scope: UsageScope): { clause: string; value?: string } {
  switch (scope.kind) {
    case "profile":
      return { clause: "" };
    case "session":
      return { clause: " WHERE session_key = @value", value: scope.sessionKey };
    case "user":
      return { clause: " WHERE user = @value", value: scope.user };
  }
}

/** Stores one model call's usage, stamped `nowMs` (its UTC day too). */
export function insertUsage(db: Database, usage: UsageRecord, nowMs: number): void {
  db.prepare(
    `INSERT INTO usage (at, day, session_key, session_id, user, model, input_tokens, output_tokens,
       cached_tokens, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  ).run(
    nowMs,
    utcDay(nowMs),
    usage.sessionKey,
    usage.sessionId,
    usage.user ?? null,
    usage.model,
    usage.inputTokens,
    usage.outputTokens,
    usage.cachedTokens,
    usage.cost,
  );
}

/** The totals of `scope` for today, the week and all time. */
export function selectPeriods(db: Database, scope: UsageScope, days: UsageDays): UsagePeriods {
  const { clause, value } = where(scope);
  const row = db
    .prepare(periodSums("") + clause)
    .get({ ...days, ...(value === undefined ? {} : { value }) }) as PeriodRow;
  return periodsOf(row);
}

/** The profile's totals of one day (the budget's check). */
export function selectDay(db: Database, day: string): UsageTotals {
  return db.prepare(`SELECT ${Sums} FROM usage WHERE day = ?`).get(day) as UsageTotals;
}

/** The profile's totals per day from `fromDay` on, oldest first (days without calls absent). */
export function selectDaily(db: Database, fromDay: string): DailyUsage[] {
  return db
    .prepare(`SELECT day, ${Sums} FROM usage WHERE day >= ? GROUP BY day ORDER BY day`)
    .all(fromDay) as DailyUsage[];
}

/** Each user's totals, the biggest spender of all time first. */
export function selectUsers(db: Database, days: UsageDays): UserUsage[] {
  const rows = db
    .prepare(
      `${periodSums("coalesce(user, 'unknown') AS user, ")} GROUP BY coalesce(user, 'unknown')
       ORDER BY all_cost DESC, all_input + all_output DESC, user`,
    )
    .all(days) as (PeriodRow & { user: string })[];
  return rows.map((row) => ({ user: row.user, ...periodsOf(row) }));
}

/** The model `/model` picked for `sessionKey`, if any. */
export function selectSessionModel(db: Database, sessionKey: string): string | undefined {
  const row = db
    .prepare<[string], { model: string }>("SELECT model FROM session_models WHERE session_key = ?")
    .get(sessionKey);
  return row?.model;
}

/** Stores `/model`'s pick for `sessionKey`; `undefined` goes back to the default. */
export function upsertSessionModel(
  db: Database,
  sessionKey: string,
  model: string | undefined,
  nowMs: number,
): void {
  if (model === undefined) {
    db.prepare("DELETE FROM session_models WHERE session_key = ?").run(sessionKey);
    return;
  }
  db.prepare(
    `INSERT INTO session_models (session_key, model, updated_at) VALUES (?, ?, ?)
     ON CONFLICT (session_key) DO UPDATE SET model = excluded.model, updated_at = excluded.updated_at`,
  ).run(sessionKey, model, nowMs);
}
