import { connectDocker } from "@mediagate/sandbox";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { type CheckResult, checkSandbox } from "./preflight.js";

/**
 * `mediagate doctor`: prints each check (config, Docker reachable with its endpoint, each
 * image present) as `✔`/`✖` lines. Returns the exit code: 0 when all pass, 1 otherwise.
 */
export async function runDoctor(
  options: { config?: string | undefined; env: GatewayEnv },
  print: (line: string) => void,
): Promise<number> {
  const results: CheckResult[] = [];
  try {
    const config = await loadConfig({ path: options.config, env: options.env });
    const names = config.profiles.map((p) => {
      const channels = [p.telegram && "telegram", p.discord && "discord"].filter(Boolean);
      return `${p.name} [${channels.length > 0 ? channels.join(", ") : "console"}]`;
    });
    results.push({
      name: "config",
      ok: true,
      detail: `${config.source ?? "embedded defaults"}; home ${config.home}; profiles ${names.join(", ")}`,
    });
    for (const p of config.profiles) {
      if ((p.telegram || p.discord) && p.allowedUsers.length === 0 && p.admins.length === 0) {
        print(`! profile ${p.name}: nobody is allowed (allowedUsers and admins are empty)`);
      }
    }
    results.push(...(await checkSandbox(config, connectDocker({ host: config.dockerHost }))));
  } catch (error) {
    results.push({
      name: "config",
      ok: false,
      detail: error instanceof Error ? error.message : String(error),
    });
  }
  for (const r of results) print(`${r.ok ? "✔" : "✖"} ${r.name}: ${r.detail}`);
  return results.every((r) => r.ok) ? 0 : 1;
}
