import type { Queryable } from "../postgres/database.js";
import {
  type DailyUsage,
  type UsageDays,
  type UsagePeriods,
  type UsageRecord,
  type UsageScope,
  type UsageTotals,
  type UserUsage,
  utcDay,
} from "./usage.js";

/**
 * Usage and `/model` picks (docs/models-and-usage.md) on PostgreSQL, with the semantics of
 * usage-database.ts. Sums come back as `float8` (node-postgres hands `bigint` and `numeric`
 * over as strings); token counts stay exact far past any real total (2^53).
 */

const Sums = `count(*)::float8 AS calls, coalesce(sum(input_tokens), 0)::float8 AS "inputTokens",
  coalesce(sum(output_tokens), 0)::float8 AS "outputTokens",
  coalesce(sum(cached_tokens), 0)::float8 AS "cachedTokens", coalesce(sum(cost), 0)::float8 AS cost`;

function period(name: string, when: string): string {
  const of = (column: string) =>
    `coalesce(sum(${column}) FILTER (WHERE ${when}), 0)::float8 AS ${name}_${column.split("_")[0]}`;
  return [
    `count(*) FILTER (WHERE ${when})::float8 AS ${name}_calls`,
    of("input_tokens"),
    of("output_tokens"),
    of("cached_tokens"),
    `coalesce(sum(cost) FILTER (WHERE ${when}), 0)::float8 AS ${name}_cost`,
  ].join(", ");
}

/** Today's, the week's and all time's sums; `$2` is today, `$3` the week's first day. */
const PeriodSums = [
  period("today", "day = $2"),
  period("week", "day >= $3"),
  period("all", "true"),
].join(", ");

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

export async function insertUsage(
  db: Queryable,
  profile: string,
  usage: UsageRecord,
  nowMs: number,
): Promise<void> {
  await db.query(
    `INSERT INTO state_usage (profile, at, day, session_key, session_id, user_id, model,
       input_tokens, output_tokens, cached_tokens, cost) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      profile,
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
    ],
  );
}

export async function selectPeriods(
  db: Queryable,
  profile: string,
  scope: UsageScope,
  days: UsageDays,
): Promise<UsagePeriods> {
  const params: unknown[] = [profile, days.today, days.weekStart];
  let clause = "";
  if (scope.kind === "session") {
    clause = " AND session_key = $4";
    params.push(scope.sessionKey);
  } else if (scope.kind === "user") {
    clause = " AND user_id = $4";
    params.push(scope.user);
  }
  const row = (
    await db.query<PeriodRow>(
      `SELECT ${PeriodSums} FROM state_usage WHERE profile = $1${clause}`,
      params,
    )
  ).rows[0];
  return periodsOf(row ?? {});
}

export async function selectDay(db: Queryable, profile: string, day: string): Promise<UsageTotals> {
  const row = (
    await db.query<UsageTotals>(`SELECT ${Sums} FROM state_usage WHERE profile = $1 AND day = $2`, [
      profile,
      day,
    ])
  ).rows[0];
  return { ...{ calls: 0, inputTokens: 0, outputTokens: 0, cachedTokens: 0, cost: 0 }, ...row };
}

export async function selectDaily(
  db: Queryable,
  profile: string,
  fromDay: string,
): Promise<DailyUsage[]> {
  const rows = await db.query<DailyUsage>(
    `SELECT day, ${Sums} FROM state_usage WHERE profile = $1 AND day >= $2
     GROUP BY day ORDER BY day COLLATE "C"`,
    [profile, fromDay],
  );
  return rows.rows.map((row) => ({ ...row }));
}

export async function selectUsers(
  db: Queryable,
  profile: string,
  days: UsageDays,
): Promise<UserUsage[]> {
  const rows = await db.query<PeriodRow & { user: string }>(
    `SELECT * FROM (
       SELECT coalesce(user_id, 'unknown') AS "user", ${PeriodSums} FROM state_usage
       WHERE profile = $1 GROUP BY coalesce(user_id, 'unknown')
     ) totals ORDER BY all_cost DESC, all_input + all_output DESC, "user" COLLATE "C"`,
    [profile, days.today, days.weekStart],
  );
  return rows.rows.map((row) => ({ user: row.user, ...periodsOf(row) }));
}

export async function selectSessionModel(
  db: Queryable,
  profile: string,
  sessionKey: string,
): Promise<string | undefined> {
  const row = (
    await db.query<{ model: string }>(
      "SELECT model FROM state_session_models WHERE profile = $1 AND session_key = $2",
      [profile, sessionKey],
    )
  ).rows[0];
  return row?.model;
}

export async function upsertSessionModel(
  db: Queryable,
  profile: string,
  sessionKey: string,
  model: string | undefined,
  nowMs: number,
): Promise<void> {
  if (model === undefined) {
    await db.query("DELETE FROM state_session_models WHERE profile = $1 AND session_key = $2", [
      profile,
      sessionKey,
    ]);
    return;
  }
  await db.query(
    `INSERT INTO state_session_models (profile, session_key, model, updated_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (profile, session_key) DO UPDATE SET model = excluded.model, updated_at = excluded.updated_at`,
    [profile, sessionKey, model, nowMs],
  );
}
