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

/** The labels every container of `slot` in `profile` carries. */
export function containerLabels(profile: string, slot: string): Record<string, string> {
  return {
    [LabelKeys.agent]: "1",
    [LabelKeys.slot]: sanitizeLabelValue(slot),
    [LabelKeys.profile]: sanitizeLabelValue(profile),
    [LabelKeys.slotHash]: slotHash(slot),
  };
}
