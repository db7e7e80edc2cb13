import type { BudgetSettings } from "../config/types.js";
import type { StateStore } from "../state/state-store.js";
import { nextUtcMidnight, type UsageTotals, utcDay } from "../state/usage.js";

/** The line a turn stopped by the daily budget ends with (docs/models-and-usage.md, "Budget"). */
export function budgetText(limit: string, nowMs: number): string {
  const resetMs = nextUtcMidnight(nowMs);
  const minutes = Math.max(1, Math.ceil((resetMs - nowMs) / 60_000));
  const hours = Math.floor(minutes / 60);
  const wait = hours === 0 ? `${minutes} min` : `${hours} h ${minutes % 60} min`;
  return `⛔ This bot's daily model budget is used up (${limit}). It resets at 00:00 UTC, in ${wait}; until then messages get no model answer.`;
}

function formatCost(cost: number): string {
  return cost.toFixed(cost < 1 ? 4 : 2);
}

/** Which limit `today` reached, as `budgetText` names it; `undefined` while both are left. */
export function reachedLimit(budget: BudgetSettings, today: UsageTotals): string | undefined {
  const tokens = today.inputTokens + today.outputTokens;
  if (budget.dailyTokens !== undefined && tokens >= budget.dailyTokens) {
    return `${tokens} of ${budget.dailyTokens} tokens today`;
  }
  if (budget.dailyCost !== undefined && today.cost >= budget.dailyCost) {
    return `cost ${formatCost(today.cost)} of ${formatCost(budget.dailyCost)} today`;
  }
  return undefined;
}

/**
 * The message that stops a model call when the profile's `budget` for today (UTC) is used up;
 * `undefined` when the call may go ahead (or there is no budget). Counts every call recorded
 * today, by all sessions and processes sharing the profile's state database.
 */
export async function budgetStop(
  store: Pick<StateStore, "usageOfDay" | "now">,
  budget: BudgetSettings | undefined,
): Promise<string | undefined> {
  if (budget === undefined) return undefined;
  const nowMs = store.now();
  const limit = reachedLimit(budget, await store.usageOfDay(utcDay(nowMs)));
  return limit === undefined ? undefined : budgetText(limit, nowMs);
}
