/**
 * Reading a recorded {@link PlanRecord} back from storage. Its own module, with nothing but
 * types imported, so the journal's SQLite worker thread can check plans without loading the
 * planner (exported as `@mediagate/media/plan-record`).
 */
import type { MediaKind, PlanRecord } from "./types.js";

/** Every kind a planned item may have. */
export const MediaKinds: readonly MediaKind[] = [
  "photo",
  "animation",
  "video",
  "audio",
  "voice",
  "document",
];

/** Whether `value` is a {@link PlanRecord} (read back from storage). */
export function isPlanRecord(value: unknown): value is PlanRecord {
  if (!isObject(value) || value.version !== 1 || typeof value.text !== "string") return false;
  if (typeof value.asVoice !== "boolean" || typeof value.asDocument !== "boolean") return false;
  return Array.isArray(value.items) && value.items.every(isPlannedItem);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isPlannedItem(value: unknown): boolean {
  if (!isObject(value) || typeof value.path !== "string") return false;
  const kind =
    typeof value.kind === "string" && (MediaKinds as readonly string[]).includes(value.kind);
  switch (value.status) {
    case "ready":
      return (
        kind &&
        typeof value.filename === "string" &&
        typeof value.mime === "string" &&
        Number.isSafeInteger(value.size) &&
        (value.hostPath === undefined || typeof value.hostPath === "string")
      );
    case "unreachable":
      return value.reason === "not_found" || value.reason === "over_max_files";
    case "denied":
      return typeof value.reason === "string";
    case "too_large":
      return kind && Number.isSafeInteger(value.size) && Number.isSafeInteger(value.limit);
    default:
      return false;
  }
}
