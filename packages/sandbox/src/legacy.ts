import { realpathSync } from "node:fs";
import { dirname, relative, sep } from "node:path";
import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { destroyContainer } from "./containers.js";
import { Defaults } from "./defaults.js";
import { messageOf } from "./docker-errors.js";
import { summarize } from "./inventory.js";
import { type ContainerOwner, LabelKeys, sanitizeLabelValue } from "./labels.js";
import type { LegacyContainer, ReapResult } from "./types.js";

/**
 * Containers made before the `mediagate.install` label existed carry no install, so no
 * lookup of this version finds them. Left running, a legacy profile container would keep
 * binding the workspace the new container binds too; so each one whose `/workspace` bind
 * lies in this install's slot directories is this install's, and is retired (stopped and
 * removed, its dirs kept: they are the data the new container binds again). Any other
 * unlabelled container (another install's, or a tmpfs one that binds nothing) cannot be
 * attributed and is left alone; `sandbox ls` names it.
 */

/** Every mediagate container on the engine without an install label. */
async function listUnlabelled(docker: Docker, bound: CallBound): Promise<Docker.ContainerInfo[]> {
  const found = await boundedCall("list containers", bound, (abortSignal) =>
    docker.listContainers({
      all: true,
      filters: { label: [`${LabelKeys.agent}=1`] },
      abortSignal,
    }),
  );
  return found.filter((c) => c.Labels?.[LabelKeys.install] === undefined);
}

/**
 * The slot dir behind a container's `/workspace` bind when it lies directly under one of
 * `roots` (compared as given and as real paths: the bind keeps the spelling it was made with).
 */
export function slotDirInRoots(
  mounts: readonly { Type?: string; Source: string; Destination: string }[] | undefined,
  roots: readonly string[],
): string | undefined {
  const workspace = mounts?.find((m) => m.Destination === "/workspace" && m.Type === "bind");
  if (workspace === undefined) return undefined;
  const slotDirs = [dirname(workspace.Source), dirname(realPath(workspace.Source))];
  const allRoots = [...roots, ...roots.map(realPath)];
  for (const slotDir of slotDirs) {
    for (const root of allRoots) {
      const rel = relative(root, slotDir);
      if (rel.length > 0 && !rel.startsWith("..") && !rel.includes(sep)) return slotDir;
    }
  }
  return undefined;
}

function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Unlabelled containers that concern this owner: those bound into `roots` (this install's,
 * whatever profile made them) and those labelled with the owner's profile (maybe another
 * install's: not attributable). Newest first.
 */
export async function listLegacyContainers(
  docker: Docker,
  owner: ContainerOwner,
  roots: readonly string[],
  bound: CallBound,
): Promise<LegacyContainer[]> {
  const profile = sanitizeLabelValue(owner.profile);
  const relevant = (await listUnlabelled(docker, bound)).filter(
    (c) =>
      slotDirInRoots(c.Mounts, roots) !== undefined || c.Labels?.[LabelKeys.profile] === profile,
  );
  const summaries = await summarize(docker, relevant, bound);
  return summaries.map((summary) => {
    const info = relevant.find((c) => c.Id === summary.id);
    return { ...summary, slotDir: slotDirInRoots(info?.Mounts, roots) };
  });
}

/**
 * Stops and removes every unlabelled container whose `/workspace` bind lies in `roots`
 * (see the module comment). Dirs are kept. Failures are recorded, the sweep goes on.
 */
export async function retireLegacyContainers(
  docker: Docker,
  roots: readonly string[],
  bound: CallBound,
): Promise<ReapResult> {
  const result: ReapResult = { removed: [], failed: [] };
  for (const c of await listUnlabelled(docker, bound)) {
    if (slotDirInRoots(c.Mounts, roots) === undefined) continue;
    try {
      await destroyContainer(docker, c.Id, Defaults.stopGraceSeconds, bound);
      result.removed.push(c.Id);
    } catch (error) {
      result.failed.push({ id: c.Id, error: messageOf(error) });
    }
  }
  return result;
}
