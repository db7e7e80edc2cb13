import path from "node:path";

/** `child` is `root` or lies below it (both absolute, normalized, no trailing slash). */
export function isWithin(child: string, root: string): boolean {
  if (root === "/") return child.startsWith("/");
  return child === root || child.startsWith(`${root}/`);
}

/** The part of `child` below `root`, without a leading slash ("" for the root itself). */
export function relativeTo(child: string, root: string): string {
  if (root === "/") return child.slice(1);
  return child.slice(root.length + 1);
}

/** Collapse `.`, `..`, `//` and a trailing slash of an absolute POSIX path. */
export function normalizeAbsolute(p: string): string {
  const normalized = path.posix.normalize(p);
  return normalized.length > 1 && normalized.endsWith("/") ? normalized.slice(0, -1) : normalized;
}

/** Container working directory of a fresh session: relative tags resolve against it. */
export const CONTAINER_CWD = "/workspace";

/**
 * The absolute container path a tag names: `~/x` means `/root/x`, a relative path is taken
 * from `/workspace` (where every session shell starts). `undefined` for a NUL byte.
 */
export function containerPathOf(tagPath: string): string | undefined {
  if (tagPath.includes("\0")) return undefined;
  let p = tagPath;
  if (p === "~" || p.startsWith("~/")) p = `/root${p.slice(1)}`;
  else if (!p.startsWith("/")) p = `${CONTAINER_CWD}/${p}`;
  return normalizeAbsolute(p);
}

/** A parsed bind: host directory mounted at a container directory. */
export interface VolumeMount {
  readonly host: string;
  readonly container: string;
}

/**
 * Parse `host:container[:mode]` binds, keeping only absolute host paths (named volumes have
 * no host directory to read), longest container path first.
 */
export function parseVolumes(volumes: readonly string[]): VolumeMount[] {
  const mounts: VolumeMount[] = [];
  for (const spec of volumes) {
    const [host, container] = spec.split(":");
    if (!host || !container || !host.startsWith("/") || !container.startsWith("/")) continue;
    mounts.push({ host: normalizeAbsolute(host), container: normalizeAbsolute(container) });
  }
  return mounts.sort((a, b) => b.container.length - a.container.length);
}
