import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

/** Length (hex chars) of an install id. */
const InstallIdLength = 12;

/**
 * The id of the install a root home belongs to: the first 12 hex chars of the sha256 of the
 * root home's real path. Two gateways with the same `MEDIAGATE_HOME` (however it is spelled:
 * through a symlink, with a trailing `/`) get one id; two with different homes get different
 * ids, so their containers never mix on one engine. A home that does not exist yet is
 * resolved through its nearest existing parent, so the id does not change when the home is
 * created later (unless a symlink is created in its path meanwhile).
 */
export function installIdOf(rootHome: string): string {
  return createHash("sha256")
    .update(realPathOf(resolve(rootHome)))
    .digest("hex")
    .slice(0, InstallIdLength);
}

function realPathOf(path: string): string {
  try {
    return realpathSync(path);
  } catch (error) {
    const parent = dirname(path);
    if (parent === path || !isMissing(error)) return path;
    return join(realPathOf(parent), basename(path));
  }
}

function isMissing(error: unknown): boolean {
  return (
    typeof error === "object" &&
    error !== null &&
    "code" in error &&
    (error.code === "ENOENT" || error.code === "ENOTDIR")
  );
}
