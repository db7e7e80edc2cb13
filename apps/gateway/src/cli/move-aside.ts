import { renameSync } from "node:fs";
import { basename, resolve } from "node:path";
import { MediagateError } from "@mediagate/io";
import { forgetJournal } from "../durable/journal-marker.js";
import { type DatabaseKind, LostWithDatabase } from "../sqlite/damage.js";
import { type FileHolder, processesHolding } from "./file-holders.js";
import { homeFileExists } from "./home-files.js";

/**
 * The files a database is made of, in the order they are moved: the log first, so a command
 * cut off between two renames never leaves an old log beside a new database that would read it.
 */
const Suffixes = ["-wal", "-shm", ""] as const;

/** The kind of database by its file name (homes hold no other SQLite files of mediagate). */
const KindByName: Readonly<Record<string, DatabaseKind>> = {
  "journal.db": "journal",
  "state.db": "state",
};

/** Options of {@link moveAside}. */
export interface MoveAsideOptions {
  /** Moves the file even when this host cannot tell who has it open (no `/proc`). */
  readonly force?: boolean | undefined;
  /** The clock of the copy's name. Default `Date.now`. */
  readonly now?: (() => number) | undefined;
  /** Who has the files open. Default {@link processesHolding}. */
  readonly holders?: ((paths: readonly string[]) => FileHolder[] | undefined) | undefined;
}

/** `mediagate db move-aside` could not do what it was asked (exit 1, this message). */
export class MoveAsideError extends MediagateError {
  override readonly name = "MoveAsideError";
  readonly code = "MG_CLI_MOVE_ASIDE_REFUSED";
}

/** `20250102T030405Z`: a UTC time that sorts, without the colons some tools dislike in names. */
function stampOf(nowMs: number): string {
  return new Date(nowMs)
    .toISOString()
    .replace(/\.\d+Z$/, "Z")
    .replace(/[-:]/g, "");
}

function describeHolders(holders: readonly FileHolder[]): string {
  return holders.map((h) => `${h.pid} (${h.command})`).join(", ");
}

/**
 * `mediagate db move-aside <file>`: moves a damaged database — a `journal.db` or a `state.db`,
 * its `-wal` and `-shm` with it — aside to `<file>.damaged-<time>` (`-wal`, `-shm` after that
 * name, so SQLite opens the copy with its log), and prints what is lost with it. The next start
 * makes a new, empty one. Refuses while any process of this host has the files open (a running
 * gateway: stop it first), or when this host cannot tell (no `/proc`) unless `force`. Moving the
 * journal also removes its marker (journal-marker.ts), so the next start does not report it as
 * lost. Returns the exit code (0).
 */
export async function moveAside(
  file: string,
  options: MoveAsideOptions,
  print: (line: string) => void,
): Promise<number> {
  const path = resolve(file);
  const kind = KindByName[basename(path)];
  if (kind === undefined) {
    throw new MoveAsideError(
      `${path} is not a mediagate database: the command moves a journal.db (the root home's) or a state.db (a profile home's)`,
    );
  }
  const present = Suffixes.map((suffix) => `${path}${suffix}`).filter((p) => homeFileExists(p));
  if (present.length === 0) throw new MoveAsideError(`there is no database at ${path}`);
  const holders = (options.holders ?? processesHolding)(present);
  if (holders === undefined && options.force !== true) {
    throw new MoveAsideError(
      `cannot tell whether a process has ${path} open (this host has no /proc); stop every gateway of this install, then run the command again with --force`,
    );
  }
  if (holders !== undefined && holders.length > 0) {
    throw new MoveAsideError(
      `${path} is open in process ${describeHolders(holders)}; stop the gateway (and any other mediagate command using it) first, then run this again`,
    );
  }
  const aside = `${path}.damaged-${stampOf((options.now ?? Date.now)())}`;
  const taken = Suffixes.map((suffix) => `${aside}${suffix}`).filter((p) => homeFileExists(p));
  if (taken.length > 0) throw new MoveAsideError(`${taken[0]} exists already; run it again`);
  const moved: string[] = [];
  for (const suffix of Suffixes) {
    if (!homeFileExists(`${path}${suffix}`)) continue;
    renameSync(`${path}${suffix}`, `${aside}${suffix}`);
    if (suffix !== "") moved.push(suffix);
  }
  if (kind === "journal") await forgetJournal(path);
  const logs = moved.length === 0 ? "" : ` (with its ${moved.join(" and ")})`;
  print(`moved ${path} aside to ${aside}${logs}`);
  print(`lost with it (the copy keeps them): ${LostWithDatabase[kind]}`);
  print(`the next start makes a new, empty ${kind === "journal" ? "journal" : "state database"}`);
  return 0;
}
