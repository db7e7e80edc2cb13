import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { profileFilters, toState } from "./containers.js";
import { type ContainerOwner, LabelKeys } from "./labels.js";
import { isReapable, ownerIsGone, slotDirOfMounts } from "./reaper.js";
import { parseDockerTime } from "./timestamps.js";
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
  const rows: ContainerInventory[] = [];
  for (const c of [...found].sort((a, b) => b.Created - a.Created)) {
    const state = toState(c.State);
    let processes: number | undefined;
    let finishedAt: Date | undefined;
    let orphan: string | undefined;
    if (state === "running") {
      const top = await boundedCall(
        "top",
        bound,
        () => docker.getContainer(c.Id).top() as Promise<{ Processes?: unknown[] }>,
        c.Id,
      ).catch(() => undefined);
      processes = top?.Processes?.length;
    }
    if (state === "exited" || state === "dead") {
      const info = await boundedCall(
        "inspect",
        bound,
        (abortSignal) => docker.getContainer(c.Id).inspect({ abortSignal }),
        c.Id,
      ).catch(() => undefined);
      finishedAt = parseDockerTime(info?.State.FinishedAt);
      if (isReapable(info?.State.FinishedAt, now, minAgeSeconds))
        orphan = `exited more than ${Math.round(minAgeSeconds / 60)} min ago`;
    }
    if (c.Labels[LabelKeys.persistent] === "0" && ownerIsGone(c.Labels))
      orphan = "its gateway process is gone";
    rows.push({
      id: c.Id,
      name: (c.Names[0] ?? "").replace(/^\//, ""),
      slot: c.Labels[LabelKeys.slot] ?? "unknown",
      profile: c.Labels[LabelKeys.profile] ?? "unknown",
      state,
      image: c.Image,
      createdAt: new Date(c.Created * 1000),
      finishedAt,
      slotDir: slotDirOfMounts(c.Mounts, sandboxRoots),
      processes,
      orphan,
    });
  }
  return rows;
}
