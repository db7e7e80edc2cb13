import { createHash } from "node:crypto";

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
   * `"1"` on the throwaway container that deletes a slot directory's contents (it is no slot's
   * container: it carries no `agent` label, so reuse, `sandbox ls` and the reaper ignore it).
   */
  slotDelete: "mediagate.slot-delete",
} as const;

const LabelUnsafe = /[^A-Za-z0-9_.-]/g;
const LabelMaxLength = 63;

/**
 * Makes a value safe for a label (SPEC §5): characters outside `[A-Za-z0-9_.-]` become `_`,
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
 * True for slots whose dirs outlive any one container (SPEC §4 rules 3, 4, 6): `default`,
 * `profile:<name>` and `shared:<key>`. Session (`session:<key>`) and task-id slots are
 * scratch that belongs to their container.
 */
export function isPersistentSlot(slot: string): boolean {
  return slot === "default" || slot.startsWith("profile:") || slot.startsWith("shared:");
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
  return slot === "default" || slot.startsWith("profile_") || slot.startsWith("shared_");
}

/** The labels every container of `slot` in `profile` carries. */
export function containerLabels(profile: string, slot: string): Record<string, string> {
  return {
    [LabelKeys.agent]: "1",
    [LabelKeys.slot]: sanitizeLabelValue(slot),
    [LabelKeys.profile]: sanitizeLabelValue(profile),
    [LabelKeys.slotHash]: slotHash(slot),
    [LabelKeys.persistent]: isPersistentSlot(slot) ? "1" : "0",
  };
}
