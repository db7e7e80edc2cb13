import { createHash } from "node:crypto";
import { join } from "node:path";
import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { containerLabels, sanitizeLabelValue } from "./labels.js";
import { sanitizeForPath } from "./sanitize-path.js";
import type { SandboxSettings } from "./types.js";

/** Slots whose container is shared by every profile that configured the same key. */
export function isSharedSlot(slot: string): boolean {
  return slot.startsWith("shared:");
}

/**
 * `<home>/sandboxes/docker/<sanitizeForPath(slot)>`, where `<home>` is the profile home,
 * or the root home for `shared:` slots (they span profiles).
 */
export function slotDirectoryOf(
  slot: string,
  homes: { readonly profileHome: string; readonly rootHome: string },
): string {
  const home = isSharedSlot(slot) ? homes.rootHome : homes.profileHome;
  return join(home, "sandboxes", "docker", sanitizeForPath(slot));
}

/**
 * The container name. With cross-process reuse it is deterministic per (profile, slot) —
 * per slot alone for `shared:` slots — so two processes racing to create the same slot
 * collide on the name (409) instead of making two containers; the loser reuses the
 * winner's. Without reuse every container gets a random suffix.
 */
export function containerName(profile: string, slot: string, unique: string | undefined): string {
  const owner = isSharedSlot(slot) ? "shared" : sanitizeLabelValue(profile).slice(0, 40);
  const readable = sanitizeForPath(slot)
    .slice(0, 40)
    .replace(/^[._-]+/, "");
  const hash = createHash("sha256").update(`${owner}\0${slot}`).digest("hex").slice(0, 12);
  return ["mediagate", owner, readable, hash, unique].filter(Boolean).join("-");
}

export interface ContainerPlan {
  readonly profile: string;
  readonly slot: string;
  readonly slotDir: string;
  readonly settings: SandboxSettings;
  readonly name: string;
}

/**
 * Create options (SPEC §5): `Init: true` (so `sleep` as PID 1 stops promptly),
 * `sleep infinity`, working dir `/workspace`, hardening (all capabilities dropped,
 * no-new-privileges, pids/memory/CPU limits, network `none` unless configured), binds of
 * the slot dir for a bind filesystem (the default) or sized tmpfs mounts (`tmpfsBytes` each,
 * `0:sandboxGid` mode 2770), plus configured volumes.
 */
export function createOptions(plan: ContainerPlan): Docker.ContainerCreateOptions {
  const { settings } = plan;
  const bound = settings.filesystem === "bind";
  const binds = bound
    ? [`${join(plan.slotDir, "workspace")}:/workspace`, `${join(plan.slotDir, "home")}:/root`]
    : [];
  // Sized, and shared by the slot's per-session users like the bind directories are.
  const tmpfs = `rw,exec,nosuid,nodev,size=${settings.tmpfsBytes},mode=2770,gid=${Defaults.sandboxGid}`;
  const hostConfig: Docker.HostConfig = {
    Init: true,
    CapDrop: ["ALL"],
    SecurityOpt: ["no-new-privileges"],
    PidsLimit: settings.pidsLimit,
    NetworkMode: settings.network,
    Binds: [...binds, ...settings.volumes],
    ...(bound ? {} : { Tmpfs: { "/workspace": tmpfs, "/root": tmpfs } }),
    Memory: settings.memoryBytes,
    ...(settings.nanoCpus === undefined ? {} : { NanoCpus: settings.nanoCpus }),
  };
  return {
    name: plan.name,
    Image: settings.image,
    Cmd: ["sleep", "infinity"],
    WorkingDir: "/workspace",
    Labels: containerLabels(plan.profile, plan.slot),
    HostConfig: hostConfig,
  };
}
