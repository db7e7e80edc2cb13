import { connectDocker } from "@mediagate/sandbox";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { Redactor } from "../redact.js";
import { checkHomes } from "./homes.js";
import { type CheckResult, checkSandbox } from "./preflight.js";

/**
 * `mediagate doctor`: prints each check (config, each home private, Docker reachable with its
 * endpoint, each image present) as `✔`/`✖` lines. Returns the exit code: 0 when all pass, 1
 * otherwise. Every line goes through `redactor` (default one of its own), which loading the
 * config teaches every secret-looking value of the file, so no secret is printed whatever key
 * it was given under.
 */
export async function runDoctor(
  options: { config?: string | undefined; env: GatewayEnv; redactor?: Redactor | undefined },
  print: (line: string) => void,
): Promise<number> {
  const redactor = options.redactor ?? new Redactor();
  const say = (line: string) => print(redactor.text(line));
  const results: CheckResult[] = [];
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
    for (const p of config.profiles) {
      if ((p.telegram || p.discord) && p.allowedUsers.length === 0 && p.admins.length === 0) {
        say(`! profile ${p.name}: nobody is allowed (allowedUsers and admins are empty)`);
      }
    }
    results.push(...(await checkHomes(config)));
    results.push(...(await checkSandbox(config, connectDocker({ host: config.dockerHost }))));
  } catch (error) {
    results.push({
      name: "config",
      ok: false,
      detail: error instanceof Error ? error.message : String(error),
    });
  }
  for (const r of results) say(`${r.ok ? "✔" : "✖"} ${r.name}: ${r.detail}`);
  return results.every((r) => r.ok) ? 0 : 1;
}
