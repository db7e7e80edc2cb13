import { reachedLimit } from "../agents/budget.js";
import type { ModelAgentSettings } from "../agents/models.js";
import { Defaults } from "../defaults.js";
import type { StateStore } from "../state/state-store.js";
import { type UsagePeriods, type UsageTotals, usageDays } from "../state/usage.js";

/** What `/usage` needs of the state store. */
export type UsageStore = Pick<StateStore, "usagePeriods" | "now">;

const integer = new Intl.NumberFormat("en-US", { maximumFractionDigits: 0 });

/** A cost with enough digits to see a cent's fraction. */
export function formatCost(cost: number): string {
  return cost.toFixed(cost !== 0 && cost < 1 ? 4 : 2);
}

/** `12 calls, 1,234 in (200 cached) + 567 out tokens, cost 0.0123`. */
export function describeTotals(totals: UsageTotals): string {
  const cached =
    totals.cachedTokens === 0 ? "" : ` (${integer.format(totals.cachedTokens)} cached)`;
  return `${integer.format(totals.calls)} calls, ${integer.format(totals.inputTokens)} in${cached} + ${integer.format(totals.outputTokens)} out tokens, cost ${formatCost(totals.cost)}`;
}

/** Three lines: today, the week, all time. */
export function describePeriods(periods: UsagePeriods, indent = "  "): string[] {
  return [
    `${indent}Today (UTC): ${describeTotals(periods.today)}`,
    `${indent}${Defaults.models.weekDays} days: ${describeTotals(periods.week)}`,
    `${indent}All time: ${describeTotals(periods.all)}`,
  ];
}

function budgetLine(settings: ModelAgentSettings, today: UsageTotals): string[] {
  const budget = settings.budget;
  if (budget === undefined) return [];
  const limits = [
    ...(budget.dailyTokens === undefined ? [] : [`${integer.format(budget.dailyTokens)} tokens`]),
    ...(budget.dailyCost === undefined ? [] : [`cost ${formatCost(budget.dailyCost)}`]),
  ].join(" or ");
  const reached = reachedLimit(budget, today);
  return [
    `  Daily budget: ${limits}${reached === undefined ? "" : " — reached"}; it resets at 00:00 UTC.`,
  ];
}

/**
 * `/usage` (docs/models-and-usage.md, "Usage"): this session's calls, tokens and cost for
 * today, the last `Defaults.models.weekDays` days and all time; an admin also gets the
 * profile's totals and its daily budget.
 */
export async function describeUsage(
  store: UsageStore,
  settings: ModelAgentSettings,
  profile: string,
  sessionKey: string,
  admin: boolean,
): Promise<string> {
  const days = usageDays(store.now(), Defaults.models.weekDays);
  const session = await store.usagePeriods({ kind: "session", sessionKey }, days);
  const lines = ["📊 Model usage of this session:", ...describePeriods(session)];
  if (admin) {
    const all = await store.usagePeriods({ kind: "profile" }, days);
    lines.push(
      `Profile "${profile}", all sessions:`,
      ...describePeriods(all),
      ...budgetLine(settings, all.today),
    );
  }
  return lines.join("\n");
}
