import { describeChannel, describeStore } from "../commands/status.js";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import type { GatewayConfig } from "../config/types.js";
import type { HealthReport } from "../health/server.js";
import { LogDefaults, LogLevelError, resolveLogLevel } from "../log.js";
import { Redactor } from "../redact.js";
import { checkHomes } from "./homes.js";
import type { CheckResult } from "./preflight.js";
import { ProbeDefaults, probeAgent, probeDiscord, probeTelegram } from "./probes.js";
import { probeStore } from "./store-probe.js";
import { probeTelegramWebhook } from "./webhook-probe.js";

/** How long doctor waits for a running gateway's health endpoint. */
const HealthTimeoutMs = ProbeDefaults.timeoutMs;
/** The most of an answer's text a doctor line shows. */
const MaxShownChars = 200;

/**
 * The channel states of the gateway running on this config, from its health endpoint: one
 * check per channel (`up` passes; `retrying`, `failed`, `starting` do not, with the reason),
 * and the journal. A gateway that does not answer is a failed check saying so.
 */
export async function checkRunningGateway(listen: string): Promise<CheckResult[]> {
  const url = `http://${listen}/health`;
  let status: number;
  let body: string;
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(HealthTimeoutMs) });
    status = response.status;
    body = await response.text();
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    return [
      {
        name: "gateway",
        ok: false,
        detail: `no answer from ${url} (${why}); is the gateway running with this config?`,
      },
    ];
  }
  const report = healthReportOf(status, body);
  if (report === undefined) {
    const said = firstLine(body);
    return [
      {
        name: "gateway",
        ok: false,
        detail:
          status === 200 || status === 503
            ? `${url} answered ${status} with something that is not a mediagate health report; is health.listen this gateway's?`
            : `${url} answered ${status}${said === "" ? "" : `: ${said}`}`,
      },
    ];
  }
  const checks: CheckResult[] = report.channels.map((channel) => ({
    name: `channel ${channel.platform} (${channel.profile})`,
    ok: channel.state === "up",
    detail: describeChannel(channel).replace(/^Channel \S+ \([^)]*\)(?: by (\S+))?: /, (_, mode) =>
      mode === undefined ? "" : `${mode}: `,
    ),
  }));
  checks.push({
    name: "journal",
    ok: report.journal.writable,
    detail: report.journal.writable ? "writable" : `not writable: ${report.journal.detail ?? "?"}`,
  });
  if (report.store !== undefined) {
    checks.push({
      name: "gateway store",
      ok: report.store.reachable,
      detail: describeStore(report.store).replace(/^Store: /, ""),
    });
  }
  return checks;
}

/**
 * The health endpoint's answer as a {@link HealthReport} (HTTP 200, or 503 when `failed`), or
 * `undefined` when something else answered: an error page, another program on that port.
 */
function healthReportOf(status: number, body: string): HealthReport | undefined {
  if (status !== 200 && status !== 503) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const { channels, journal } = value as Partial<Record<keyof HealthReport, unknown>>;
  if (!Array.isArray(channels) || typeof journal !== "object" || journal === null) return undefined;
  return value as HealthReport;
}

/** The first line of an answer's text, cut to fit a doctor line. */
function firstLine(text: string): string {
  const line = text.trim().split("\n", 1)[0] ?? "";
  return line.length > MaxShownChars ? `${line.slice(0, MaxShownChars - 1)}…` : line;
}

/** `LOG_LEVEL` (or `log.level`) as `start` reads it: a failed check when start would refuse it. */
function logLevelCheck(env: GatewayEnv, config: GatewayConfig): CheckResult[] {
  try {
    resolveLogLevel({
      fromEnv: env.logLevel,
      fromConfig: config.logLevel,
      fallback: LogDefaults.level,
    });
    return [];
  } catch (error) {
    if (!(error instanceof LogLevelError)) throw error;
    return [{ name: "log level", ok: false, detail: error.message }];
  }
}

/**
 * Each profile's bot tokens and agent endpoint, probed at once (each bounded by `timeoutMs`),
 * in a stable order: Telegram, Discord, then the agent, profile by profile.
 */
async function probeProfiles(config: GatewayConfig, timeoutMs: number): Promise<CheckResult[]> {
  const probes = config.profiles.flatMap((p) => [
    p.telegram === undefined ? undefined : probeTelegram(p.name, p.telegram, { timeoutMs }),
    p.telegram === undefined ? undefined : probeTelegramWebhook(p.name, p.telegram, { timeoutMs }),
    p.discord === undefined ? undefined : probeDiscord(p.name, p.discord, { timeoutMs }),
    ...probeAgent(p.name, p.agent, { timeoutMs }),
  ]);
  const results = await Promise.all(probes);
  return results.filter((r): r is CheckResult => r !== undefined);
}

/**
 * `mediagate doctor`: prints each check as a `✔`/`✖` line, a failed one followed by an
 * indented `fix:` line saying what to do: the config, each home private, Docker reachable with
 * its endpoint, each image present (or whether the engine could pull it; nothing is pulled),
 * the store (PostgreSQL: reachable, round trip, schema version; docs/store.md),
 * each bot token (`getMe`, Discord `/users/@me`), each Telegram webhook (`getWebhookInfo`
 * against the profile's delivery mode), each agent endpoint (`/models`), and a
 * running gateway's channels when `health.listen` is set. Network probes run at once, each
 * bounded by `probeTimeoutMs` (default `ProbeDefaults.timeoutMs`). Returns the exit code: 0
 * when all pass, 1 otherwise. Every line goes through `redactor` (default one of its own),
 * which loading the config teaches every secret-looking value of the file, so no token or key
 * is printed whatever key it was given under.
 */
export async function runDoctor(
  options: {
    config?: string | undefined;
    env: GatewayEnv;
    redactor?: Redactor | undefined;
    probeTimeoutMs?: number | undefined;
  },
  print: (line: string) => void,
): Promise<number> {
  const redactor = options.redactor ?? new Redactor();
  const say = (line: string) => print(redactor.text(line));
  const results: CheckResult[] = [];
  const notes: string[] = [];
  const timeoutMs = options.probeTimeoutMs ?? ProbeDefaults.timeoutMs;
  try {
    const config = await loadConfig({ path: options.config, env: options.env, redactor });
    const names = config.profiles.map((p) => {
      const channels = [p.telegram && "telegram", p.discord && "discord"].filter(Boolean);
      return `${p.name} [${channels.length > 0 ? channels.join(", ") : "console"}]`;
    });
    results.push({
      name: "config",
      ok: true,
      detail: `${config.source ?? "embedded defaults"}; home ${config.home}; profiles ${names.join(", ")}`,
    });
    results.push(...logLevelCheck(options.env, config));
    for (const p of config.profiles) {
      if ((p.telegram || p.discord) && p.allowedUsers.length === 0 && p.admins.length === 0) {
        say(`! profile ${p.name}: nobody is allowed (allowedUsers and admins are empty)`);
      }
    }
    const probing = probeProfiles(config, timeoutMs);
    const storeProbe = probeStore(config.store, timeoutMs);
    results.push(...(await checkHomes(config)));
    // The engine client loads once the config is valid (a config error is answered without it).
    const [{ connectDocker }, { checkSandbox }] = await Promise.all([
      import("@mediagate/sandbox"),
      import("./preflight.js"),
    ]);
    results.push(...(await checkSandbox(config, connectDocker({ host: config.dockerHost }))));
    results.push(await storeProbe);
    results.push(...(await probing));
    if (config.healthListen === undefined) {
      notes.push("- channels: set health.listen to see a running gateway's channel states here");
    } else {
      results.push(...(await checkRunningGateway(config.healthListen)));
    }
  } catch (error) {
    results.push({
      name: "config",
      ok: false,
      detail: error instanceof Error ? error.message : String(error),
    });
  }
  for (const r of results) {
    say(`${r.ok ? "✔" : "✖"} ${r.name}: ${r.detail}`);
    if (!r.ok && r.fix !== undefined) say(`  fix: ${r.fix}`);
  }
  for (const note of notes) say(note);
  return results.every((r) => r.ok) ? 0 : 1;
}
