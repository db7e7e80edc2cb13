import { createHash } from "node:crypto";
import { currentInstanceId } from "./instance.js";
import { keepsDirsBySlotLabel, slotTraits } from "./slot-key.js";

/** Every label key this package puts on (and filters containers by). */
export const LabelKeys = {
  agent: "mediagate.agent",
  slot: "mediagate.slot",
  profile: "mediagate.profile",
  /**
   * First 32 hex chars of sha256(slot key). The `slot` label is lossy (63 chars, `_` for
   * anything unusual), so two session slots could share it; reuse matches on this too.
   */
  slotHash: "mediagate.slot-hash",
  /**
   * `"1"` when the slot's dirs are persistent data, not scratch: the profile's workspace and
   * home (`default`, `profile:<name>`) or a shared one (`shared:<key>`); `"0"` for session
   * and task-id slots. The orphan reaper deletes the dirs of reaped `"0"` containers only.
   */
  persistent: "mediagate.persistent",
  /**
   * The install the container belongs to: 12 hex of sha256 of the real path of the root home
   * (see `installIdOf`). Every lookup filters by it, so two gateways with different homes on
   * one engine never see each other's containers. Containers made before it existed have none.
   */
  install: "mediagate.install",
  /**
   * `"1"` on the throwaway container that deletes a slot directory's contents (it is no slot's
   * container: it carries no `agent` label, so reuse and `sandbox ls` ignore it; the reaper
   * sweeps it as a throwaway, `ThrowawayKinds`).
   */
  slotDelete: "mediagate.slot-delete",
  /**
   * `"1"` on the throwaway container that kills a slot's processes from outside its cgroup
   * (`killFromOutside`): no slot's container either. Removed when the kill ends, and by the
   * reaper like a delete container when that removal failed (`ThrowawayKinds`).
   */
  processKill: "mediagate.process-kill",
  /**
   * The gateway process that made the container (`currentInstanceId()`, not sanitized). A
   * scratch container (`persistent` = `"0"`) or throwaway container whose owner is gone (the
   * process crashed: no idle timer or shutdown of its will remove it) is an orphan, removed
   * by the next `reapOrphans` in any state. Containers of persistent slots keep it as
   * history only: any process of the install reuses them.
   */
  owner: "mediagate.owner",
  /**
   * The cluster (the id its PostgreSQL database made once: docs/cluster.md) of the replica that
   * made the container. Absent outside a cluster (the SQLite store).
   */
  cluster: "mediagate.cluster",
  /**
   * The replica that made the container. In a cluster every lookup also filters by it, so two
   * replicas on one engine (or with homes at the same path, hence the same install id) never
   * reuse, list, remove or reap each other's containers.
   */
  replica: "mediagate.replica",
} as const;

const LabelUnsafe = /[^A-Za-z0-9_.-]/g;
const LabelMaxLength = 63;

/**
 * Makes a value safe for a label (docs/sandbox.md): characters outside `[A-Za-z0-9_.-]` become `_`,
 * at most 63 chars; empty or non-string values become `unknown`.
 */
export function sanitizeLabelValue(value: unknown): string {
  if (typeof value !== "string" || value.length === 0) return "unknown";
  return value.replace(LabelUnsafe, "_").slice(0, LabelMaxLength);
}

/** The slot hash label value (see {@link LabelKeys.slotHash}). */
export function slotHash(slot: string): string {
  return createHash("sha256").update(slot).digest("hex").slice(0, 32);
}

/**
 * True for slots whose dirs outlive any one container (docs/sandbox.md, slot rule 3, 4, 6): `default`,
 * `profile:<name>` and `shared:<key>`. Session (`session:<key>`) and task-id slots are
 * scratch that belongs to their container. Asks the slot-key grammar (`slotTraits`).
 */
export function isPersistentSlot(slot: string): boolean {
  return slotTraits(slot).persistentData;
}

/**
 * Whether a container's slot dirs must be kept when the container goes, from its labels:
 * the {@link LabelKeys.persistent} label, or for containers made before that label existed,
 * the label-safe slot (`default`, `profile_…`, `shared_…`; a missing slot label keeps too).
 * When in doubt the dirs are kept: losing a profile's files is worse than leaking a dir.
 */
export function keepsSlotDirs(labels: Readonly<Record<string, string>> | undefined): boolean {
  const marked = labels?.[LabelKeys.persistent];
  if (marked === "1" || marked === "0") return marked === "1";
  const slot = labels?.[LabelKeys.slot];
  if (slot === undefined) return true;
  return keepsDirsBySlotLabel(slot);
}

/** Who a container belongs to: its install (see {@link LabelKeys.install}) and profile. */
export interface ContainerOwner {
  readonly install: string;
  readonly profile: string;
  /** The cluster and replica of a gateway that is one of several replicas (docs/cluster.md). */
  readonly replica?: ReplicaLabels | undefined;
}

/** The {@link LabelKeys.cluster} and {@link LabelKeys.replica} values of a replica's containers. */
export interface ReplicaLabels {
  /** Absent where the cluster's database is not asked (`mediagate sandbox reap`'s throwaways). */
  readonly cluster?: string | undefined;
  readonly replica: string;
}

/** The cluster and replica labels of `owner`'s containers (none outside a cluster). */
export function replicaLabels(owner: Pick<ContainerOwner, "replica">): Record<string, string> {
  if (owner.replica === undefined) return {};
  const { cluster, replica } = owner.replica;
  return {
    ...(cluster === undefined ? {} : { [LabelKeys.cluster]: sanitizeLabelValue(cluster) }),
    [LabelKeys.replica]: sanitizeLabelValue(replica),
  };
}

/** The label filter that keeps a replica to its own containers (none outside a cluster). */
export function replicaFilters(owner: Pick<ContainerOwner, "replica">): string[] {
  return owner.replica === undefined
    ? []
    : [`${LabelKeys.replica}=${sanitizeLabelValue(owner.replica.replica)}`];
}

/** The labels every container of `slot` owned by `owner`, made by this process, carries. */
export function containerLabels(owner: ContainerOwner, slot: string): Record<string, string> {
  return {
    [LabelKeys.agent]: "1",
    [LabelKeys.install]: owner.install,
    [LabelKeys.owner]: currentInstanceId(),
    [LabelKeys.slot]: sanitizeLabelValue(slot),
    [LabelKeys.profile]: sanitizeLabelValue(owner.profile),
    [LabelKeys.slotHash]: slotHash(slot),
    [LabelKeys.persistent]: isPersistentSlot(slot) ? "1" : "0",
    ...replicaLabels(owner),
  };
}
