import type { FileReader } from "./types.js";

/**
 * The reason of a file its session could not read itself (docs/security.md, "Files in
 * replies"): fixed, naming neither the file's owner nor its mode.
 */
export const NotReadable = "not readable by the session";

/**
 * The detail of a path that left its root on the host and met a directory its session cannot
 * search before it came back in: nothing behind it was looked up. Such a path is read out of
 * the container; found nowhere, it is withheld (see `planMedia`), so whether the name exists
 * on the host is never told.
 */
export const UnsearchableOutside = "outside its root, behind a directory the session cannot search";

/** The owner, group and mode of a file or directory, as `stat` gives them. */
export interface Ownership {
  readonly uid: number;
  readonly gid: number;
  readonly mode: number;
}

/** `reader` may read a file with this ownership. */
export function mayRead(stats: Ownership, reader: FileReader): boolean {
  return permits(stats, reader, 0o4);
}

/** `reader` may look names up in (search) a directory with this ownership. */
export function maySearch(stats: Ownership, reader: FileReader): boolean {
  return permits(stats, reader, 0o1);
}

/**
 * The kernel's check for a process without capabilities: the owner's bits when it owns the
 * file, else the group's when it is in the file's group, else the others'. Nothing overrides
 * them, not uid 0: the sandbox's users hold no capability (docs/security.md).
 */
function permits(stats: Ownership, reader: FileReader, bit: number): boolean {
  const shift =
    reader.uid !== undefined && stats.uid === reader.uid
      ? 6
      : reader.gids.includes(stats.gid)
        ? 3
        : 0;
  return ((stats.mode >> shift) & bit) === bit;
}
