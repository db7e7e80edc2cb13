/** What the engine's path-stat header says about one path (lstat semantics). */
export interface PathStat {
  readonly size: number;
  readonly mode: number;
  readonly linkTarget: string;
}

/** Go's os.ModeSymlink. */
const GoSymlinkMode = 0x08000000;
/** Go's os.ModeDir. */
const GoDirMode = 0x80000000;

/** More symlink substitutions than this (Linux's MAXSYMLINKS) means a loop: give up. */
export const MaxLinkHops = 40;

/** The canonical form of a container path and, when it is the requested path itself, its stat. */
export interface CanonicalPath {
  readonly path: string;
  /** Stat of the last component walked; set whenever `path` equals the requested path. */
  readonly stat: PathStat | undefined;
}

const isSymlink = (stat: PathStat) => (stat.mode & GoSymlinkMode) !== 0;
const isDirectory = (stat: PathStat) => (stat.mode & GoDirMode) !== 0;

/**
 * Resolves an absolute container path to its canonical form, like `realpath(3)`: empty,
 * `.` and `..` components are dropped, and every component that is a symlink (parent
 * directories too, not only the last one) is replaced by its target, walking the prefixes
 * one `stat` (lstat semantics) at a time. Absolute targets restart from `/`; relative ones
 * are taken from the link's directory; either way the target is walked again component by
 * component, so the result contains no link whatever the engine put in `linkTarget`.
 * `undefined` when the path is not absolute, a component is missing, something that is
 * not a directory has components after it, or more than {@link MaxLinkHops} links are met.
 */
export async function canonicalPath(
  path: string,
  stat: (path: string) => Promise<PathStat | undefined>,
): Promise<CanonicalPath | undefined> {
  if (!path.startsWith("/")) return undefined;
  const pending = path.split("/").reverse();
  let resolved: string[] = [];
  let last: PathStat | undefined;
  let hops = 0;
  for (let part = pending.pop(); part !== undefined; part = pending.pop()) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      resolved.pop();
      last = undefined;
      continue;
    }
    const prefix = `/${[...resolved, part].join("/")}`;
    const found = await stat(prefix);
    if (found === undefined) return undefined;
    if (isSymlink(found)) {
      hops += 1;
      if (hops > MaxLinkHops || found.linkTarget === "") return undefined;
      if (found.linkTarget.startsWith("/")) resolved = [];
      pending.push(...found.linkTarget.split("/").reverse());
      last = undefined;
      continue;
    }
    if (!isDirectory(found) && pending.length > 0) return undefined;
    resolved.push(part);
    last = found;
  }
  return { path: `/${resolved.join("/")}`, stat: last };
}
