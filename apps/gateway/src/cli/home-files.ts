import { statSync } from "node:fs";
import { MediagateError } from "@mediagate/io";

/** A command could not look at a file of a home: most often another user's home (exit 1). */
export class HomeFileAccessError extends MediagateError {
  override readonly name = "HomeFileAccessError";
  readonly code = "MG_CLI_HOME_UNREADABLE";
}

/**
 * Whether a database file of a home (`journal.db`, `state.db`, their logs) exists. Node's
 * `existsSync` answers `false` for a file this user may not look at, so run as another user
 * than the gateway's (its home is 0700), `usage` and `pairing list` reported nothing
 * recorded and `store migrate` "nothing to move", each exiting 0. Only a file that is not
 * there is absent here; anything else is a {@link HomeFileAccessError} naming the file.
 */
export function homeFileExists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" || code === "ENOTDIR") return false;
    const uid = process.geteuid?.();
    const who = uid === undefined ? "" : ` as uid ${uid}`;
    throw new HomeFileAccessError(
      `cannot look at ${path}${who} (${String(code)}): run mediagate as the user the gateway runs as, who owns its home`,
    );
  }
}
