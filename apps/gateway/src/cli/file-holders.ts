import { readdirSync, readFileSync, readlinkSync, realpathSync } from "node:fs";

/** A process that has one of the files open. */
export interface FileHolder {
  readonly pid: number;
  /** Its command line, as `/proc/<pid>/cmdline` gives it (arguments joined by spaces). */
  readonly command: string;
}

function commandOf(pid: string): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim() || "?";
  } catch {
    return "?";
  }
}

/**
 * The processes of this host that have any of `paths` open, found through `/proc/<pid>/fd`
 * (a SQLite connection keeps its database file open as long as it lives, so a running gateway,
 * a `mediagate pairing` in progress or an `sqlite3` shell are all found). Processes of other
 * users are not seen unless this one runs as root; they cannot open an owner-only file of this
 * user anyway. `undefined` when this host has no `/proc` to look in. Paths that do not exist
 * are skipped.
 */
export function processesHolding(paths: readonly string[]): FileHolder[] | undefined {
  const wanted = new Set<string>();
  for (const path of paths) {
    try {
      wanted.add(realpathSync(path));
    } catch {
      // Not there: nobody holds it.
    }
  }
  let pids: string[];
  try {
    readdirSync("/proc/self/fd");
    pids = readdirSync("/proc").filter((name) => /^[0-9]+$/.test(name));
  } catch {
    return undefined;
  }
  if (wanted.size === 0) return [];
  const holders: FileHolder[] = [];
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    const holds = fds.some((fd) => {
      try {
        return wanted.has(readlinkSync(`/proc/${pid}/fd/${fd}`));
      } catch {
        return false;
      }
    });
    if (holds) holders.push({ pid: Number(pid), command: commandOf(pid) });
  }
  return holders;
}
