import type { CrashLoopResult, KillRecord } from "./crash-loop.js";
import type { GatewayProcess } from "./gateway-process.js";
import type { ReplyAudit } from "./reply-audit.js";

/** `31 runs, start to serving median 1.2 s (max 2.0 s)`. */
export function startSummary(runs: readonly GatewayProcess[]): string {
  const times = runs
    .flatMap((r) => (r.readyAtMs === undefined ? [] : [r.readyAtMs - r.spawnedAtMs]))
    .sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] ?? 0;
  const max = times.at(-1) ?? 0;
  return `${runs.length} runs, start to serving median ${(median / 1000).toFixed(1)} s (max ${(max / 1000).toFixed(1)} s)`;
}

/** `30 SIGKILLs (timer 8, after-receipt 7, …; 2 at the uptime bound), median 1.4 s after serving`. */
export function killSummary(kills: readonly KillRecord[]): string {
  const byMoment = new Map<string, number>();
  for (const kill of kills) byMoment.set(kill.moment, (byMoment.get(kill.moment) ?? 0) + 1);
  const moments = [...byMoment].map(([moment, n]) => `${moment} ${n}`).join(", ");
  const fellBack = kills.filter((k) => k.fellBack).length;
  const sorted = kills.map((k) => k.afterMs).sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? 0;
  return (
    `${kills.length} SIGKILLs (${moments}; ${fellBack} at the uptime bound), ` +
    `median ${(median / 1000).toFixed(1)} s after serving`
  );
}

/** `lost 3 of the 20 messages sent to the last run (which was not killed)`, or "". */
export function lastRunLosses(audit: ReplyAudit, loop: CrashLoopResult): string {
  const toLast = audit.verdicts.slice(loop.sentBeforeLastRun);
  const lost = toLast.filter((v) => v.outcome === "lost").length;
  return `${lost} lost of the ${toLast.length} messages sent to the last run (never killed)`;
}

/**
 * When messages (or media replies' files) were lost: every run's warnings and errors (each
 * run's log file is kept with `FAULT_KEEP_LOGS`), and the end of the last two runs' logs.
 */
export function lostMessageLogs(
  audit: ReplyAudit,
  bench: { runs: readonly GatewayProcess[] },
): string[] {
  if (audit.lost.length === 0 && audit.filesMissing.length === 0) return [];
  const warnings = bench.runs.map((run) => {
    const lines = run.output.split("\n").filter((line) => /"level":(4|5|6)0/.test(line));
    return `run ${run.run} (pid ${run.pid}, ${run.logFile}): ${lines.length} warnings or errors${lines.length === 0 ? "" : `\n${lines.slice(-20).join("\n")}`}`;
  });
  const tails = bench.runs
    .slice(-2)
    .map((run) => `log of run ${run.run} (last 60 lines):\n${run.tail(60)}`);
  return [...warnings, ...tails];
}
