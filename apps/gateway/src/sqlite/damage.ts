/**
 * A damaged database file: what SQLite calls it, and the way out an operator is told. Loaded
 * by the worker programs too (through the error classes), so it imports nothing but
 * error-causes.ts, which imports nothing.
 */
import { codeOf, findInCauses } from "../error-causes.js";

/** SQLite's result codes (extended ones included) for a file whose contents are not sound. */
const DamagedCodes = /^SQLITE_(CORRUPT|NOTADB)(_|$)/;

/**
 * Whether `code` means the file itself is damaged (`SQLITE_CORRUPT`: "database disk image is
 * malformed", `SQLITE_NOTADB`: "file is not a database", and their extended codes): unlike a
 * full disk or a held lock, retrying never heals it.
 */
export function isDamagedCode(code: string | undefined): boolean {
  return code !== undefined && DamagedCodes.test(code);
}

/** Whether `error` or one of its causes carries a code {@link isDamagedCode} accepts. */
export function isDamaged(error: unknown): boolean {
  return findInCauses(error, (link) => isDamagedCode(codeOf(link))) !== undefined;
}

/** The two kinds of database a home holds (docs/durability.md). */
export type DatabaseKind = "journal" | "state";

/** What moving each kind of database aside loses: the new file starts empty. */
export const LostWithDatabase: Readonly<Record<DatabaseKind, string>> = {
  journal:
    "the messages received but not answered yet (a platform does not offer a confirmed message again), the replies waiting in the outbox, and the Discord catch-up cursors (messages sent while no gateway ran are not fetched)",
  state:
    "the profile's conversation history (every chat starts a new session), its pairing approvals and pending codes (approved users pair again)",
};

/** The command that moves a damaged database file aside (docs/operations.md). */
export function moveAsideCommand(path: string): string {
  return `mediagate db move-aside ${path}`;
}

/**
 * The way out of a damaged `kind` database at `path`, as the end of an error line: the command,
 * what it keeps and what is lost.
 */
export function damagedWayOut(kind: DatabaseKind, path: string): string {
  return `stop the gateway and run \`${moveAsideCommand(path)}\`: it keeps the damaged file as ${path}.damaged-<time> and the next start makes a new, empty one; lost with it: ${LostWithDatabase[kind]}`;
}
