import { connectDocker, Sandbox, sanitizeLabelValue } from "@mediagate/sandbox";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import type { GatewayConfig } from "../config/types.js";
import type { Redactor } from "../redact.js";

type Print = (line: string) => void;

function sandboxes(config: GatewayConfig, only?: string): { profile: string; sandbox: Sandbox }[] {
  const engine = connectDocker({ host: config.dockerHost });
  return config.profiles
    .filter((p) => only === undefined || p.name === only)
    .map((p) => ({
      profile: p.name,
      sandbox: new Sandbox({
        engine,
        profile: p.name,
        profileHome: p.home,
        rootHome: config.home,
        settings: { ...p.sandbox, orphanReaper: false },
      }),
    }));
}

/** Options shared by the `mediagate sandbox` subcommands. */
export interface SandboxCommandOptions {
  readonly config?: string | undefined;
  readonly profile?: string | undefined;
  readonly env: GatewayEnv;
  /** Learns the config's secrets, so the CLI can scrub what it prints. */
  readonly redactor?: Redactor | undefined;
}

/** `mediagate sandbox ls`: this gateway's containers, one line each. */
export async function sandboxList(options: SandboxCommandOptions, print: Print): Promise<number> {
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  let count = 0;
  for (const { sandbox } of sandboxes(config, options.profile)) {
    for (const c of await sandbox.list()) {
      count++;
      print(
        [c.id.slice(0, 12), c.profile, c.slot, c.state, c.image, c.createdAt.toISOString()].join(
          "\t",
        ),
      );
    }
  }
  if (count === 0) print("no containers");
  return 0;
}

/** `mediagate sandbox rm <id|slot>`: removes a container (and its dirs) by id prefix or slot. */
export async function sandboxRemove(
  target: string,
  options: SandboxCommandOptions,
  print: Print,
): Promise<number> {
  if (target.trim() === "") {
    print("name a container id (prefix) or a slot key");
    return 1;
  }
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  for (const { profile, sandbox } of sandboxes(config, options.profile)) {
    const containers = await sandbox.list();
    const byId = containers.find((c) => c.id.startsWith(target) || c.name === target);
    const bySlot = containers.find((c) => c.slot === sanitizeLabelValue(target));
    const match = byId ?? bySlot;
    if (match !== undefined) {
      // By slot key when given one: the sandbox then also drops its in-process handle.
      await sandbox.remove(byId !== undefined ? match.id : target);
      print(`removed ${match.id.slice(0, 12)} (profile ${profile}, slot ${match.slot})`);
      return 0;
    }
  }
  print(`no container of this gateway matches ${target}`);
  return 1;
}

/** `mediagate sandbox reap`: runs the orphan reaper for each profile now. */
export async function sandboxReap(options: SandboxCommandOptions, print: Print): Promise<number> {
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  let failures = 0;
  for (const { profile, sandbox } of sandboxes(config, options.profile)) {
    const result = await sandbox.reapOrphans();
    for (const id of result.removed) print(`reaped ${id.slice(0, 12)} (profile ${profile})`);
    for (const f of result.failed)
      print(`failed ${f.id.slice(0, 12)} (profile ${profile}): ${f.error}`);
    failures += result.failed.length;
    if (result.removed.length === 0 && result.failed.length === 0)
      print(`profile ${profile}: nothing to reap`);
  }
  return failures === 0 ? 0 : 1;
}
