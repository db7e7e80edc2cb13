import { readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { LostWithDatabase } from "../sqlite/damage.js";

/**
 * A journal that was lost is told apart from a first start by a marker beside it,
 * `<journal>.created`, written once the journal has been opened: a journal missing (or empty)
 * while its marker is there was lost. `mediagate db move-aside` removes the marker with the
 * journal it moves, so the journal the next start makes is a first one, not a loss.
 */
export function journalMarkerPath(journalPath: string): string {
  return `${journalPath}.created`;
}

/** A journal that is gone while its marker says there was one. */
export interface LostJournal {
  readonly path: string;
  readonly marker: string;
  /** When the marker was written: the journal's creation, or when a gateway first opened it. */
  readonly since: string;
}

interface MarkerRecord {
  readonly since: string;
  readonly about: string;
}

const About =
  "mediagate wrote this when it first opened the journal beside it: a journal missing while this file is here was lost (docs/durability.md)";

function isMarkerRecord(value: unknown): value is MarkerRecord {
  return (
    typeof value === "object" && value !== null && typeof (value as MarkerRecord).since === "string"
  );
}

async function sizeOf(path: string): Promise<number | undefined> {
  return stat(path).then(
    (info) => info.size,
    () => undefined,
  );
}

/**
 * The journal at `journalPath` if it was lost: its file is missing or empty (its `-wal` too)
 * while its marker is there. Read before the journal is opened (opening makes a new file).
 */
export async function findLostJournal(journalPath: string): Promise<LostJournal | undefined> {
  const marker = journalMarkerPath(journalPath);
  const text = await readFile(marker, "utf8").catch(() => undefined);
  if (text === undefined) return undefined;
  if (((await sizeOf(journalPath)) ?? 0) > 0) return undefined;
  if (((await sizeOf(`${journalPath}-wal`)) ?? 0) > 0) return undefined;
  let record: unknown;
  try {
    record = JSON.parse(text);
  } catch {
    record = undefined;
  }
  return {
    path: journalPath,
    marker,
    since: isMarkerRecord(record) ? record.since : "an unknown time (the marker is unreadable)",
  };
}

/**
 * Writes the marker (owner-only, whole, by rename) unless it is there; `replace` writes it anew
 * (after a loss: the new journal's time).
 */
export async function markJournal(
  journalPath: string,
  nowMs: number,
  replace = false,
): Promise<void> {
  const marker = journalMarkerPath(journalPath);
  if (!replace && (await sizeOf(marker)) !== undefined) return;
  const record: MarkerRecord = { since: new Date(nowMs).toISOString(), about: About };
  const partial = `${marker}.${process.pid}.tmp`;
  await writeFile(partial, `${JSON.stringify(record)}\n`, { mode: 0o600 });
  await rename(partial, marker);
}

/** Removes the marker (the journal was moved aside on purpose). */
export async function forgetJournal(journalPath: string): Promise<void> {
  await rm(journalMarkerPath(journalPath), { force: true });
}

/** The error line of a lost journal: what is gone with it. */
export function lostJournalText(lost: LostJournal): string {
  return `the journal ${lost.path} is gone: ${lost.marker} says one was in use since ${lost.since}. A new, empty journal was made; what the old one held is lost: ${LostWithDatabase.journal}. If the file was moved away on purpose, this is expected (\`mediagate db move-aside\` does it without this line)`;
}
