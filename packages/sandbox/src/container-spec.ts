import { createHash } from "node:crypto";
import { join } from "node:path";
import type Docker from "dockerode";
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
 * Per-session users: PID 1 (and the gateway's housekeeping execs) stay root, with only the
 * capabilities the housekeeping needs (own the session state dirs, kill any session's
 * processes); session uids get none, and RLIMIT_NPROC caps each of them (root is exempt).
 * Root mode keeps no capability at all.
 */
function privilegesOf(settings: SandboxSettings): Partial<Docker.HostConfig> {
  if (settings.user === "root") return {};
  const limit = settings.sessionProcessLimit;
  return {
    CapAdd: ["CHOWN", "DAC_OVERRIDE", "FOWNER", "KILL"],
    Ulimits: [{ Name: "nproc", Soft: limit, Hard: limit }],
  };
}

/**
 * Create options (SPEC §5): `Init: true` (so `sleep` as PID 1 stops promptly),
 * `sleep infinity`, working dir `/workspace`, hardening (all capabilities dropped but the
 * per-session housekeeping's four, no-new-privileges, pids/memory/CPU limits, a per-uid
 * process limit, network `none` unless configured), binds of
 * the slot dir for a bind filesystem (the default) or tmpfs, plus configured volumes.
 */
export function createOptions(plan: ContainerPlan): Docker.ContainerCreateOptions {
  const { settings } = plan;
  const bound = settings.filesystem === "bind";
  const binds = bound
    ? [`${join(plan.slotDir, "workspace")}:/workspace`, `${join(plan.slotDir, "home")}:/root`]
    : [];
  const hostConfig: Docker.HostConfig = {
    Init: true,
    CapDrop: ["ALL"],
    ...privilegesOf(settings),
    SecurityOpt: ["no-new-privileges"],
    PidsLimit: settings.pidsLimit,
    NetworkMode: settings.network,
    Binds: [...binds, ...settings.volumes],
    ...(bound
      ? {}
      : { Tmpfs: { "/workspace": "rw,exec,nosuid,nodev", "/root": "rw,exec,nosuid,nodev" } }),
    ...(settings.memoryBytes === undefined ? {} : { Memory: settings.memoryBytes }),
    ...(settings.nanoCpus === undefined ? {} : { NanoCpus: settings.nanoCpus }),
  };
  return {
    name: plan.name,
    Image: settings.image,
    ...(settings.user === "root" ? {} : { User: "0:0" }),
    Cmd: ["sleep", "infinity"],
    WorkingDir: "/workspace",
    Labels: containerLabels(plan.profile, plan.slot),
    HostConfig: hostConfig,
  };
}
