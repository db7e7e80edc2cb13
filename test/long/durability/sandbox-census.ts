import { createHash } from "node:crypto";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import type { DockerObserver } from "../../e2e/harness/docker-observer.js";

/** One container of the profile as the engine lists it. */
export interface CensusContainer {
  readonly id: string;
  readonly state: string;
  /** `mediagate.slot` (label-safe, possibly cut). */
  readonly slot: string;
  /** `mediagate.slot-hash`: the first 32 hex of sha256 of the full slot key. */
  readonly slotHash: string;
  /** `mediagate.persistent`: whether the slot's directories are the profile's data. */
  readonly persistent: boolean;
  /** `mediagate.owner`: `<hostname>/<boot id>/<pid>/<start time>` of the process that made it. */
  readonly owner: string;
}

/** A profile's sandboxes at one moment: containers and slot directories. */
export interface SandboxCensus {
  readonly containers: readonly CensusContainer[];
  /** Directory names under `<profile home>/sandboxes/docker/`. */
  readonly slotDirs: readonly string[];
}

/** The slot-hash label of a slot key (docs/sandbox.md: 32 hex of its sha256). */
export function slotHashOf(slot: string): string {
  return createHash("sha256").update(slot).digest("hex").slice(0, 32);
}

/**
 * The directory name of a slot key, computed from the rule in docs/sandbox.md (not asked of
 * the sandbox package): unchanged when it holds only `[A-Za-z0-9._-]`, else the cleaned key
 * cut to 115 chars and trimmed of `.`/`_`, a `-` and 12 hex of the key's sha256.
 */
export function slotDirNameOf(slot: string): string {
  const cleaned = slot.replace(/[^A-Za-z0-9._-]/g, "_");
  if (cleaned === slot && slot.length <= 128 && !slot.endsWith(".")) return slot;
  const base = cleaned
    .slice(0, 115)
    .replace(/^[._]+/, "")
    .replace(/[._]+$/, "");
  const hash = createHash("sha256").update(slot).digest("hex").slice(0, 12);
  return `${base.length > 0 ? base : "task"}-${hash}`;
}

/** The slot of a per-session container of `sessionKey` (docs/sandbox.md, rule 5). */
export const sessionSlotOf = (sessionKey: string): string => `session:${sessionKey}`;

/** The slot of a named profile's persistent container (docs/sandbox.md, rule 6). */
export const profileSlotOf = (profile: string): string => `profile:${profile}`;

/** Lists the profile's containers (install and profile labels) and its slot directories. */
export async function takeCensus(
  docker: DockerObserver,
  where: { install: string; profile: string; profileHome: string },
): Promise<SandboxCensus> {
  const listed = await docker.containers({
    "mediagate.agent": "1",
    "mediagate.install": where.install,
    "mediagate.profile": where.profile,
  });
  const containers = listed.map((c) => ({
    id: c.id.slice(0, 12),
    state: c.state,
    slot: c.labels["mediagate.slot"] ?? "",
    slotHash: c.labels["mediagate.slot-hash"] ?? "",
    persistent: c.labels["mediagate.persistent"] === "1",
    owner: c.labels["mediagate.owner"] ?? "",
  }));
  const slotDirs = await readdir(join(where.profileHome, "sandboxes", "docker")).catch(
    (error: unknown) => {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw error;
    },
  );
  return { containers, slotDirs: slotDirs.sort() };
}

/**
 * What is wrong with a persistent profile's sandboxes: anything but exactly one container
 * (running) for the profile's slot, and any slot directory but the profile's. `atMostOne`: a
 * replica of a cluster, where the slot's pin may be another replica's (docs/cluster.md, "Slot
 * pins"): none is right too, and the one a replica has may be stopped.
 */
export function persistentSlotProblems(
  census: SandboxCensus,
  profile: string,
  { atMostOne = false }: { readonly atMostOne?: boolean } = {},
): string[] {
  const slot = profileSlotOf(profile);
  const problems: string[] = [];
  const own = census.containers.filter((c) => c.slotHash === slotHashOf(slot));
  const running = own.filter((c) => c.state === "running");
  if (atMostOne ? own.length > 1 : own.length !== 1 || running.length !== 1) {
    problems.push(
      `expected ${atMostOne ? "at most" : "exactly"} one ${atMostOne ? "" : "running "}container for slot ${slot}, found ${own.length} (${describe(own)})`,
    );
  }
  const others = census.containers.filter((c) => c.slotHash !== slotHashOf(slot));
  if (others.length > 0) {
    problems.push(`${others.length} container(s) of other slots: ${describe(others)}`);
  }
  const strayDirs = census.slotDirs.filter((d) => d !== slotDirNameOf(slot));
  if (strayDirs.length > 0) {
    problems.push(
      `${strayDirs.length} slot director(ies) besides ${slot}'s: ${strayDirs.join(", ")}`,
    );
  }
  return problems;
}

/** Per-session containers and directories that belong to none of `liveSessionKeys`. */
export interface Orphans {
  readonly containers: readonly CensusContainer[];
  readonly slotDirs: readonly string[];
}

/**
 * Per-session containers (running or not) and `session…` slot directories whose session is
 * not among `liveSessionKeys` (the sessions the running process served), warm pool containers
 * of the running process (pid `livePid`) and the directories of those still waiting aside:
 * what processes that are gone left behind.
 */
export function orphansOf(
  census: SandboxCensus,
  liveSessionKeys: Iterable<string>,
  livePid?: number,
): Orphans {
  const live = [...liveSessionKeys].map(sessionSlotOf);
  const liveHashes = new Set(live.map(slotHashOf));
  const liveDirs = new Set(live.map(slotDirNameOf));
  const livePool = census.containers.filter((c) => livePid !== undefined && isLivePool(c, livePid));
  // A slot directory's name ends in 12 hex of its slot's sha256: the label's first 12.
  const livePoolDirs = new Set(livePool.map((c) => c.slotHash.slice(0, 12)));
  return {
    containers: census.containers.filter(
      (c) => !c.persistent && !liveHashes.has(c.slotHash) && !livePool.includes(c),
    ),
    slotDirs: census.slotDirs.filter(
      (d) =>
        d.startsWith("session") && !liveDirs.has(d) && !livePoolDirs.has(d.split("-").at(-1) ?? ""),
    ),
  };
}

/**
 * A warm pool's container (docs/sandbox.md, "Warm pool") of the running process (pid
 * `livePid`): waiting for a new session, or taken by one, it keeps the pool's slot label, so
 * only its owner tells it is the running process's, not a dead one's.
 */
function isLivePool(container: CensusContainer, livePid: number): boolean {
  return (
    container.slot.startsWith("session_mediagate-warm-pool_") &&
    container.owner.split("/")[2] === String(livePid)
  );
}

/** `id state slot` of each container, comma-separated (at most 10, then a count). */
export function describe(containers: readonly CensusContainer[]): string {
  const shown = containers.slice(0, 10).map((c) => `${c.id} ${c.state} ${c.slot}`);
  const more = containers.length > 10 ? `, … ${containers.length - 10} more` : "";
  return shown.length === 0 ? "none" : shown.join(", ") + more;
}
