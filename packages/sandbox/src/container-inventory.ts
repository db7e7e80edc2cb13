import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { profileFilters } from "./containers.js";
import { summarize } from "./inventory.js";
import { type ContainerOwner, LabelKeys } from "./labels.js";
import { isReapable, ownerIsGone, slotDirOfMounts } from "./reaper.js";
import type { ContainerInventory } from "./types.js";

/**
 * This profile's containers of this install, newest first, each with its slot directory,
 * process count and whether the reaper takes it (the same rules as `reapOrphans`: a scratch
 * container whose owner is gone, an exited one older than `minAgeSeconds`). Only looks.
 */
export async function inventoryContainers(
  docker: Docker,
  owner: ContainerOwner,
  sandboxRoots: readonly string[],
  minAgeSeconds: number,
  now: Date,
  bound: CallBound,
): Promise<ContainerInventory[]> {
  const found = await boundedCall("list containers", bound, (abortSignal) =>
    docker.listContainers({ all: true, filters: { label: profileFilters(owner) }, abortSignal }),
  );
  const listed = new Map(found.map((c) => [c.Id, c]));
  const rows: ContainerInventory[] = [];
  for (const summary of await summarize(docker, found, bound)) {
    const c = listed.get(summary.id)!;
    let processes: number | undefined;
    let orphan: string | undefined;
    if (summary.state === "running") {
      const top = await boundedCall(
        "top",
        bound,
        () => docker.getContainer(c.Id).top() as Promise<{ Processes?: unknown[] }>,
        c.Id,
      ).catch(() => undefined);
      processes = top?.Processes?.length;
    }
    // Only an exited or dead container has a finish time (summarize inspects those).
    if (isReapable(summary.finishedAt?.toISOString(), now, minAgeSeconds))
      orphan = `exited more than ${Math.round(minAgeSeconds / 60)} min ago`;
    if (c.Labels[LabelKeys.persistent] === "0" && ownerIsGone(c.Labels))
      orphan = "its gateway process is gone";
    rows.push({ ...summary, slotDir: slotDirOfMounts(c.Mounts, sandboxRoots), processes, orphan });
  }
  return rows;
}
