import { posix } from "node:path";
import { RegistryDir } from "./shell-scripts.js";

/** The world-writable scratch directories every image expects, each a sized tmpfs. */
export const ScratchDirs = ["/tmp", "/var/tmp"] as const;

/** The gateway's own mount in every container: session uids, shell state, files on their way in. */
export const RegistryMountPoint = RegistryDir;

/** Where every container gets a tmpfs of `scratchBytes`: the scratch directories and the registry. */
export const ScratchMountPoints = [...ScratchDirs, RegistryMountPoint] as const;

/** Where the slot's own directories are mounted (binds of the slot directory, or tmpfs). */
export const SlotMountPoints = ["/workspace", "/root"] as const;

/**
 * The container path a `host:container[:ro|rw]` volume binds, as the engine compares mount
 * points: normalised, so `/tmp/` and `/var/./tmp` are `/tmp` and `/var/tmp`.
 */
export function volumeTarget(volume: string): string {
  const normalized = posix.normalize(volume.split(":")[1] ?? "");
  return normalized.length > 1 && normalized.endsWith("/") ? normalized.slice(0, -1) : normalized;
}

/**
 * Whether a volume binds a mount point the sandbox makes itself: the engine refuses such a
 * container ("duplicate mount point"), or, below `/run/mediagate`, the volume would reach into
 * the gateway's own state. A volume below `/workspace`, `/root` or a scratch directory is fine.
 */
export function bindsSandboxMount(volume: string): boolean {
  const target = volumeTarget(volume);
  return (
    [...SlotMountPoints, ...ScratchMountPoints].some((point) => point === target) ||
    target.startsWith(`${RegistryDir}/`)
  );
}
