import type { UsageDayView, UsageView } from "@mediagate/web";
import type { ProfileRuntime } from "../profiles/profile-runtime.js";
import { lastDays, NoUsage } from "../state/usage.js";

/**
 * The console's Usage page (docs/web-console.md, "Usage"): for each profile that talks to a
 * model, its calls, tokens and cost per UTC day over the last `days` days (a day without
 * calls as zeros, so the bars keep their places), and its daily budget.
 */
export async function usageView(
  runtimes: ReadonlyMap<string, ProfileRuntime>,
  days: number,
): Promise<UsageView> {
  const profiles: UsageView["profiles"][number][] = [];
  for (const runtime of runtimes.values()) {
    const agent = runtime.profile.agent;
    if (agent.kind !== "openai") continue;
    const wanted = lastDays(runtime.store.now(), days);
    const recorded = new Map(
      (await runtime.store.usageDaily(wanted[0]!)).map((day) => [day.day, day]),
    );
    const series: UsageDayView[] = wanted.map((day) => recorded.get(day) ?? { day, ...NoUsage });
    profiles.push({
      profile: runtime.profile.name,
      days: series,
      ...(agent.budget === undefined ? {} : { budget: agent.budget }),
    });
  }
  return { profiles };
}
