import { lstat, readdir } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { profileFilters, toState } from "./containers.js";
import { type ContainerOwner, LabelKeys } from "./labels.js";
import { isReapable, ownerIsGone, slotDirOfMounts } from "./reaper.js";
import { parseDockerTime } from "./timestamps.js";
import type { ContainerSummary } from "./types.js";

/** One container as the web console shows it (docs/web-console.md). */
export interface ContainerInventory extends ContainerSummary {
  /** The slot directory on the host it binds as `/workspace`'s parent (none with tmpfs). */
  readonly slotDir?: string | undefined;
  /** Processes running in it (`docker top`), for a running container. */
  readonly processes?: number | undefined;
  /**
   * Why the orphan reaper would remove it, when it would: its gateway process is gone (a
   * scratch container), or it exited longer ago than the reaper's minimum age.
   */
  readonly orphan?: string | undefined;
}

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

/**
 * Bytes a directory tree takes on disk (allocated blocks), links not followed; stops counting
 * after `maxEntries` entries (`complete` false then).
 */
export async function directoryUsage(
  dir: string,
  maxEntries = 100_000,
): Promise<{ bytes: number; complete: boolean }> {
  let bytes = 0;
  let seen = 0;
  const stack = [dir];
  while (stack.length > 0) {
    const current = stack.pop()!;
    let entries: string[];
    try {
      const info = await lstat(current);
      bytes += info.blocks * 512;
      if (!info.isDirectory()) continue;
      entries = await readdir(current);
    } catch {
      continue;
    }
    for (const name of entries) {
      if (++seen > maxEntries) return { bytes, complete: false };
      stack.push(join(current, name));
    }
  }
  return { bytes, complete: true };
}
