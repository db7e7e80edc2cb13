import { createHash } from "node:crypto";
import { join } from "node:path";
import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { type ContainerOwner, containerLabels, LabelKeys, sanitizeLabelValue } from "./labels.js";
import { ScratchDirs, volumeTarget } from "./mount-points.js";
import { sanitizeForPath } from "./sanitize-path.js";
import { RegistryDir } from "./shell-scripts.js";
import { slotTraits } from "./slot-key.js";
import type { SandboxSettings } from "./types.js";

/**
 * The container name: `mediagate-<install>-<owner>-<readable slot>-<hash>[-<unique>]`, the
 * owner being the profile, or `shared` for slots that span profiles. With cross-process reuse
 * it is deterministic per (install, profile, slot) — per (install, slot) for `shared:` slots —
 * so two processes racing to create the same slot collide on the name (409) instead of making
 * two containers; the loser reuses the winner's. The install keeps two homes on one engine
 * from colliding. Without reuse every container gets a random suffix.
 */
export function containerName(
  owner: ContainerOwner,
  slot: string,
  unique: string | undefined,
): string {
  const who = slotTraits(slot).spansProfiles
    ? "shared"
    : sanitizeLabelValue(owner.profile).slice(0, 40);
  const readable = sanitizeForPath(slot)
    .slice(0, 40)
    .replace(/^[._-]+/, "");
  const hash = createHash("sha256")
    // A replica's own containers (docs/cluster.md): two replicas with one install id on one
    // engine never collide on a name, so neither reuses the other's container.
    .update(
      `${owner.install}\0${who}\0${slot}${owner.replica === undefined ? "" : `\0${owner.replica.replica}`}`,
    )
    .digest("hex")
    .slice(0, 12);
  return ["mediagate", owner.install, who, readable, hash, unique].filter(Boolean).join("-");
}

export interface ContainerPlan {
  readonly owner: ContainerOwner;
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
 * The container's writable places besides `/workspace` and `/root`, all sized
 * (`scratchBytes` each), since the root filesystem is read-only: `/tmp` and `/var/tmp`
 * (mode 1777, as images have them; left out where a volume binds the same path, which the
 * gateway's configuration refuses: `bindsSandboxMount`),
 * and `/run/mediagate`. The latter is a volume of the `local` driver backed by a tmpfs, not a
 * plain tmpfs mount: the engine's archive API (inbox uploads, which are staged there) reaches
 * volumes but writes beneath a tmpfs mount, and refuses a read-only root. The volume is
 * anonymous, so removing the container with its volumes (`v`) removes it.
 */
function scratchMounts(plan: ContainerPlan): {
  tmpfs: Record<string, string>;
  mounts: Docker.MountSettings[];
} {
  const size = plan.settings.scratchBytes;
  const taken = new Set(plan.settings.volumes.map(volumeTarget));
  const tmpfs: Record<string, string> = {};
  for (const dir of ScratchDirs) {
    if (!taken.has(dir)) tmpfs[dir] = `rw,exec,nosuid,nodev,size=${size},mode=1777`;
  }
  const registry: Docker.MountSettings = {
    Type: "volume",
    Source: "",
    Target: RegistryDir,
    VolumeOptions: {
      NoCopy: true,
      Labels: {
        [LabelKeys.install]: plan.owner.install,
        [LabelKeys.profile]: sanitizeLabelValue(plan.owner.profile),
      },
      DriverConfig: {
        Name: "local",
        Options: {
          type: "tmpfs",
          device: "tmpfs",
          o: `size=${size},mode=0711,nosuid,nodev,noexec`,
        },
      },
    },
  };
  return { tmpfs, mounts: [registry] };
}

/**
 * Create options (docs/sandbox.md): `Init: true` (so `sleep` as PID 1 stops promptly),
 * `sleep infinity`, working dir `/workspace`, hardening (all capabilities dropped but the
 * per-session housekeeping's four, no-new-privileges, pids/memory/CPU limits, a per-uid
 * process limit, network `none` unless configured, a read-only root filesystem with sized
 * scratch mounts: {@link scratchMounts}), binds of the slot dir for a bind filesystem (the
 * default) or sized tmpfs mounts (`tmpfsBytes` each, `0:sandboxGid` mode 2770), plus
 * configured volumes.
 */
export function createOptions(plan: ContainerPlan): Docker.ContainerCreateOptions {
  const { settings } = plan;
  const bound = settings.filesystem === "bind";
  const binds = bound
    ? [`${join(plan.slotDir, "workspace")}:/workspace`, `${join(plan.slotDir, "home")}:/root`]
    : [];
  // Sized, and shared by the slot's per-session users like the bind directories are.
  const tmpfs = `rw,exec,nosuid,nodev,size=${settings.tmpfsBytes},mode=2770,gid=${Defaults.sandboxGid}`;
  const scratch = scratchMounts(plan);
  const hostConfig: Docker.HostConfig = {
    Init: true,
    CapDrop: ["ALL"],
    ...privilegesOf(settings),
    SecurityOpt: ["no-new-privileges"],
    PidsLimit: settings.pidsLimit,
    NetworkMode: settings.network,
    ReadonlyRootfs: true,
    Binds: [...binds, ...settings.volumes],
    Mounts: scratch.mounts,
    Tmpfs: { ...scratch.tmpfs, ...(bound ? {} : { "/workspace": tmpfs, "/root": tmpfs }) },
    Memory: settings.memoryBytes,
    ...(settings.nanoCpus === undefined ? {} : { NanoCpus: settings.nanoCpus }),
  };
  return {
    name: plan.name,
    Image: settings.image,
    ...(settings.user === "root" ? {} : { User: "0:0" }),
    Cmd: ["sleep", "infinity"],
    WorkingDir: "/workspace",
    Labels: containerLabels(plan.owner, plan.slot),
    HostConfig: hostConfig,
  };
}
