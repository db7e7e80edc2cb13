import { Defaults } from "./defaults.js";
import type { SandboxSettings } from "./types.js";

/**
 * How many session shells one container may hold open: `maxOpenShells` when it is set, else
 * derived from the container's limits: `Defaults.openShellsPidsShare` of `pidsLimit` (each
 * shell is one process), and no more than `memoryBytes` holds at `Defaults.openShellMemoryBytes`
 * each; at least 1.
 */
export function maxOpenShellsOf(
  settings: Pick<SandboxSettings, "pidsLimit" | "memoryBytes" | "maxOpenShells">,
): number {
  if (settings.maxOpenShells !== undefined) return settings.maxOpenShells;
  const byPids = Math.floor(settings.pidsLimit * Defaults.openShellsPidsShare);
  const byMemory = Math.floor(settings.memoryBytes / Defaults.openShellMemoryBytes);
  return Math.max(1, Math.min(byPids, byMemory));
}
