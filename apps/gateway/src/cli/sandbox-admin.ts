import { MediagateError } from "@mediagate/io";
import {
  type ContainerSummary,
  connectDocker,
  type LegacyContainer,
  Sandbox,
  sanitizeLabelValue,
} from "@mediagate/sandbox";
import { resolveReplicaId } from "../cluster/replica-id.js";
import type { GatewayEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import type { GatewayConfig } from "../config/types.js";
import type { Redactor } from "../redact.js";
import { formatDuration } from "./duration.js";

type Print = (line: string) => void;

/** `-p` named a profile the config does not have. */
export class UnknownProfileError extends MediagateError {
  override readonly name = "UnknownProfileError";
  readonly code = "MG_CLI_UNKNOWN_PROFILE";

  constructor(
    readonly profile: string,
    readonly known: readonly string[],
  ) {
    super(
      `unknown profile "${profile}": the config has ${known.map((n) => `"${n}"`).join(", ")} (use -p with one of them, or leave it out for all)`,
    );
  }
}

/** The profiles the command acts on, each with a sandbox; an unknown `-p` is an error. */
async function sandboxes(
  config: GatewayConfig,
  options: SandboxCommandOptions,
): Promise<{ profile: string; sandbox: Sandbox }[]> {
  const only = options.profile;
  const known = config.profiles.map((p) => p.name);
  if (only !== undefined && !known.includes(only)) throw new UnknownProfileError(only, known);
  const engine = connectDocker({ host: config.dockerHost });
  // A replica of a cluster acts on its own containers only (docs/cluster.md).
  const replica =
    config.store.kind === "postgres"
      ? { replica: await resolveReplicaId(config.home, config.cluster?.replicaId) }
      : undefined;
  return config.profiles
    .filter((p) => only === undefined || p.name === only)
    .map((p) => ({
      profile: p.name,
      sandbox: new Sandbox({
        engine,
        profile: p.name,
        profileHome: p.home,
        rootHome: config.home,
        replica,
        dataSlotsRoot: replica === undefined ? undefined : config.cluster?.slotsDir,
        settings: { ...p.sandbox, orphanReaper: false },
        ...(options.now === undefined ? {} : { now: options.now }),
      }),
    }));
}

/** `mediagate sandbox rm` removed nothing: no target, no container, or more than one matched. */
export class SandboxCommandError extends MediagateError {
  override readonly name = "SandboxCommandError";
  readonly code = "MG_CLI_SANDBOX_REFUSED";
}

/** Options shared by the `mediagate sandbox` subcommands. */
export interface SandboxCommandOptions {
  readonly config?: string | undefined;
  readonly profile?: string | undefined;
  readonly env: GatewayEnv;
  /** Clock (ms since epoch) for the reaper's age check. Default `Date.now`; tests move it. */
  readonly now?: (() => number) | undefined;
  /**
   * `sandbox reap --older-than`: exited containers that finished more than this many seconds
   * ago are reaped. Default per profile
   * `2 × max(Defaults.reaperMinLifetimeSeconds, lifetimeSeconds)` (the sandbox's `Defaults`).
   */
  readonly olderThanSeconds?: number | undefined;
  /** Learns the config's secrets, so the CLI can scrub what it prints. */
  readonly redactor?: Redactor | undefined;
}

/**
 * The shortest `--older-than`: a container that exited less than a minute ago may be one a
 * running gateway is restarting (a persistent slot's, found stopped).
 */
export const MinReapAgeSeconds = 60;

/**
 * The longest `--older-than`, 10 years: no container exited longer ago (the engine is younger),
 * so a larger age (`30y` typed for `30m`, `1e9d`) would reap no exited container and say nothing.
 */
export const MaxReapAgeSeconds = 3650 * 86_400;

/** The columns of `sandbox ls`, printed as its first line. */
export const ListHeader = ["CONTAINER", "PROFILE", "SLOT", "STATE", "IMAGE", "CREATED"].join("\t");

/**
 * `mediagate sandbox ls`: this install's containers, a header row then one tab-separated line
 * each (`ListHeader`). Containers of another
 * install (another root home) on the same engine are never listed. Containers made before
 * containers carried their install follow as notes: those bound into this install's slot
 * dirs are this install's (`sandbox reap` or the next start retires them), the others are
 * not attributable and are left alone.
 */
export async function sandboxList(options: SandboxCommandOptions, print: Print): Promise<number> {
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  let count = 0;
  const legacy = new Map<string, LegacyContainer>();
  for (const { sandbox } of await sandboxes(config, options)) {
    for (const c of await sandbox.list()) {
      if (count++ === 0) print(ListHeader);
      print(
        [c.id.slice(0, 12), c.profile, c.slot, c.state, c.image, c.createdAt.toISOString()].join(
          "\t",
        ),
      );
    }
    for (const c of await sandbox.legacyContainers()) legacy.set(c.id, c);
  }
  if (count === 0) print("no containers");
  if (legacy.size > 0) {
    print(
      `note: ${legacy.size} container(s) without an install label (made by an older mediagate):`,
    );
  }
  for (const c of legacy.values()) {
    const verdict =
      c.slotDir === undefined
        ? "not attributable to this install: left alone (docker rm it if it is yours)"
        : `binds ${c.slotDir} of this install: retired by \`mediagate sandbox reap\` or the next start (files kept)`;
    print(["legacy", c.id.slice(0, 12), c.profile, c.slot, c.state, verdict].join("\t"));
  }
  return 0;
}

/**
 * `mediagate sandbox rm <id|slot>`: removes a container of this install by id prefix, name
 * or slot key (its dirs are kept). Another install's container is never matched.
 * @throws SandboxCommandError when nothing was removed (no target, no match, several).
 */
export async function sandboxRemove(
  target: string,
  options: SandboxCommandOptions,
  print: Print,
): Promise<number> {
  if (target.trim() === "") {
    throw new SandboxCommandError("name a container id (prefix) or a slot key");
  }
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  // Every container the target could mean, in every profile, before anything is removed: an
  // id prefix two containers share, or a slot key that is also another container's id
  // prefix, names no one container, and the first found is not necessarily the one meant.
  const matches: {
    profile: string;
    sandbox: Sandbox;
    container: ContainerSummary;
    byId: boolean;
  }[] = [];
  for (const { profile, sandbox } of await sandboxes(config, options)) {
    for (const container of await sandbox.list()) {
      const byId = container.id.startsWith(target) || container.name === target;
      if (byId || container.slot === sanitizeLabelValue(target)) {
        matches.push({ profile, sandbox, container, byId });
      }
    }
  }
  const distinct = new Set(matches.map((m) => m.container.id));
  if (distinct.size > 1) {
    const listed = matches.map(
      (m) => `${m.container.id.slice(0, 12)} (profile ${m.profile}, slot ${m.container.slot})`,
    );
    throw new SandboxCommandError(
      `${target} matches ${distinct.size} containers: ${listed.join(", ")}; nothing was removed: give more of the id (\`mediagate sandbox ls\`), or -p with the profile`,
    );
  }
  const [match] = matches;
  if (match === undefined) {
    throw new SandboxCommandError(
      `no container of this gateway matches ${target} (see \`mediagate sandbox ls\`)`,
    );
  }
  // By slot key when given one: the sandbox then also drops its in-process handle.
  await match.sandbox.remove(match.byId ? match.container.id : target);
  print(
    `removed ${match.container.id.slice(0, 12)} (profile ${match.profile}, slot ${match.container.slot})`,
  );
  return 0;
}

/**
 * `mediagate sandbox reap`: runs the orphan reaper for each profile now: this install's
 * per-session and task containers whose gateway process is gone (running or not, with their
 * slot dirs), its exited containers older than the minimum age (`olderThanSeconds`, else
 * the profile's default; each profile's first line says which it used), and legacy
 * (unlabelled) containers bound into this install's slot dirs.
 */
export async function sandboxReap(options: SandboxCommandOptions, print: Print): Promise<number> {
  const olderThan = options.olderThanSeconds;
  if (olderThan !== undefined && !(olderThan >= MinReapAgeSeconds)) {
    throw new RangeError(
      `--older-than must be at least ${formatDuration(MinReapAgeSeconds)}, got ${formatDuration(olderThan)}: a younger exited container may be one a running gateway is about to start again`,
    );
  }
  if (olderThan !== undefined && olderThan > MaxReapAgeSeconds) {
    throw new RangeError(
      `--older-than must be at most ${formatDuration(MaxReapAgeSeconds)}, got ${formatDuration(olderThan)}: no container exited that long ago, so it would reap none (write e.g. 30m, 2h or 7d)`,
    );
  }
  const config = await loadConfig({
    path: options.config,
    env: options.env,
    redactor: options.redactor,
  });
  let failures = 0;
  for (const { profile, sandbox } of await sandboxes(config, options)) {
    const result = await sandbox.reapOrphans({ minAgeSeconds: options.olderThanSeconds });
    const source =
      olderThan === undefined ? "default: 2 × lifetimeSeconds, at least 2 minutes" : "--older-than";
    print(
      `profile ${profile}: reaping exited containers older than ${formatDuration(result.minAgeSeconds)} (${source}) and containers of gateway processes that are gone`,
    );
    // A removed container is named by its short id, a removed slot directory by its path.
    const shown = (id: string) => (id.startsWith("/") ? `slot directory ${id}` : id.slice(0, 12));
    for (const id of result.removed) print(`reaped ${shown(id)} (profile ${profile})`);
    for (const f of result.failed) print(`failed ${shown(f.id)} (profile ${profile}): ${f.error}`);
    failures += result.failed.length;
    if (result.removed.length === 0 && result.failed.length === 0)
      print(`profile ${profile}: nothing to reap`);
  }
  return failures === 0 ? 0 : 1;
}
