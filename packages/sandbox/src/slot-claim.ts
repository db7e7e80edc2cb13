import { lstat, mkdir, rename, rmdir, unlink } from "node:fs/promises";
import { join } from "node:path";
import { codeOf } from "./docker-errors.js";
import { SlotOwnerFile } from "./slot-dirs.js";
import { isMountPoint, moveDiskMount } from "./slot-disk.js";
import { slotPaths } from "./slot-paths.js";

/** Whether a slot directory (or anything at its path) exists. */
export async function slotDirExists(slotDir: string): Promise<boolean> {
  try {
    await lstat(slotDir);
    return true;
  } catch (error) {
    if (codeOf(error) === "ENOENT") return false;
    throw error;
  }
}

/**
 * Hands a warm container's slot directory to the session that claims it: afterwards the
 * directory the container binds is `to` (the session's slot directory, which must not exist),
 * and nothing is left at `from`. A plain directory is renamed: the container's binds follow
 * the directory, not its path. A directory with a disk ceiling is a mount point, which cannot
 * be renamed: its disk is mounted at `to` and unmounted from `from`
 * ({@link moveDiskMount}), and its image renamed to `to`'s, so deleting `to` unmounts and
 * unlinks it as it would a disk made for `to`. Call holding both slots' locks.
 */
export async function moveSlotDirectory(from: string, to: string): Promise<void> {
  if (!(await isMountPoint(from))) {
    await rename(from, to);
    return;
  }
  await mkdir(to, { mode: 0o700 });
  try {
    await moveDiskMount(from, to);
  } catch (error) {
    await rmdir(to).catch(() => undefined);
    throw error;
  }
  await rename(slotPaths(from).image, slotPaths(to).image);
  // What was under the mount point: the owner file written before the disk was mounted.
  await unlink(join(from, SlotOwnerFile)).catch(() => undefined);
  await rmdir(from).catch(() => undefined);
}
