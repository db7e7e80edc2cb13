import { MediagateError } from "@mediagate/io";
import { reachedLimit } from "../agents/budget.js";
import { formatCost } from "../commands/usage.js";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { Defaults } from "../defaults.js";
import { printable } from "../printable.js";
import type { Redactor } from "../redact.js";
import { type UsagePeriods, type UsageTotals, usageDays } from "../state/usage.js";
import { type StoredProfile, withProfileState } from "./profile-state.js";

type Print = (line: string) => void;

/** Options of `mediagate usage`. */
export interface UsageCommandOptions {
  readonly config?: string | undefined;
  readonly profile?: string | undefined;
  readonly env: GatewayEnv;
  /** Learns the config's secrets, so the CLI can scrub what it prints. */
  readonly redactor?: Redactor | undefined;
  /** The clock "today" is taken from. Default `Date.now`; tests set it. */
  readonly now?: (() => number) | undefined;
}

/** `mediagate usage` could not do what it was asked (exit 1, this message). */
export class UsageCommandError extends MediagateError {
  override readonly name = "UsageCommandError";
  readonly code = "MG_CLI_USAGE_FAILED";
}

/** The columns of `mediagate usage`, printed as its first line. */
export const UsageHeader = [
  "PROFILE",
  "USER",
  "PERIOD",
  "CALLS",
  "INPUT",
  "CACHED",
  "OUTPUT",
  "COST",
].join("\t");

const Periods = [
  ["today", "today"],
  [`${Defaults.models.weekDays}d`, "week"],
  ["all", "all"],
] as const satisfies readonly (readonly [string, keyof UsagePeriods])[];

async function profilesOf(options: UsageCommandOptions): Promise<readonly StoredProfile[]> {
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  const known = config.profiles.map((p) => p.name);
  const only = options.profile;
  if (only !== undefined && !known.includes(only)) {
    throw new UsageCommandError(
      `unknown profile "${only}": the config has ${known.map((n) => `"${n}"`).join(", ")} (use -p with one of them, or leave it out for all)`,
    );
  }
  return config.profiles
    .filter((p) => only === undefined || p.name === only)
    .map((p) => ({ ...p, store: config.store }));
}

function cells(totals: UsageTotals): string[] {
  return [
    String(totals.calls),
    String(totals.inputTokens),
    String(totals.cachedTokens),
    String(totals.outputTokens),
    formatCost(totals.cost),
  ];
}

/**
 * `mediagate usage` (docs/operations.md): per profile, the calls, input (of which cached) and
 * output tokens and cost of today (UTC), the last `Defaults.models.weekDays` days and all time;
 * first the profile's totals (user `*`), then each user's, the biggest spender first. A header
 * row then tab-separated lines, every cell through {@link printable} (user ids came from the
 * platforms). A profile whose state database does not exist yet is left out; one with a daily
 * budget gets a note saying how much of it today used. Reads beside a running gateway.
 */
export async function usageReport(options: UsageCommandOptions, print: Print): Promise<number> {
  const nowMs = (options.now ?? Date.now)();
  const days = usageDays(nowMs, Defaults.models.weekDays);
  let rows = 0;
  const row = (values: readonly string[]) => {
    if (rows++ === 0) print(UsageHeader);
    print(values.map((value) => printable(value)).join("\t"));
  };
  const notes: string[] = [];
  for (const profile of await profilesOf(options)) {
    await withProfileState(profile, {}, async (store) => {
      const all = await store.usagePeriods({ kind: "profile" }, days);
      if (all.all.calls === 0) return;
      for (const [label, key] of Periods) row([profile.name, "*", label, ...cells(all[key])]);
      for (const user of await store.usageByUser(days)) {
        for (const [label, key] of Periods)
          row([profile.name, user.user, label, ...cells(user[key])]);
      }
      const budget = profile.agent.kind === "openai" ? profile.agent.budget : undefined;
      if (budget !== undefined) {
        const reached = reachedLimit(budget, all.today);
        notes.push(
          `profile ${profile.name}: daily budget ${reached === undefined ? "not reached" : `reached (${reached})`}; days are UTC`,
        );
      }
    });
  }
  if (rows === 0) print("no model calls recorded");
  for (const note of notes) print(note);
  return 0;
}
