import {
  access,
  chmod,
  chown,
  lstat,
  mkdir,
  open,
  readdir,
  readFile,
  rename,
  rmdir,
  stat,
  unlink,
  writeFile,
} from "node:fs/promises";
import { join } from "node:path";
import { type ContainedDeleteContext, deleteInContainer } from "./contained-delete.js";
import { Defaults } from "./defaults.js";
import { codeOf, messageOf } from "./docker-errors.js";
import { SlotDirectoryError } from "./errors.js";
import { currentInstanceId } from "./instance.js";
import {
  createDiskImage,
  diskCeilingObstacle,
  isMountPoint,
  lacksExt4Superblock,
  mountDiskImage,
  unmountAll,
} from "./slot-disk.js";
import { slotPaths } from "./slot-paths.js";
import type { SandboxSettings } from "./types.js";

/** The two directories of a slot that its containers bind (`/workspace`, `/root`). */
const BoundDirs = ["workspace", "home"] as const;

/** What {@link prepareSlotDirectory} reads of the settings. */
export type SlotDirSettings = Pick<SandboxSettings, "filesystem" | "diskLimitBytes">;

/**
 * Makes a slot directory ready for a container, under the slot's lock. `<home>/sandboxes`,
 * its `docker/` and the slot directory are 0700 (made so, or set so when they exist), so no
 * other host user reaches anything a sandbox wrote. With a bind filesystem and a disk ceiling
 * the slot directory is the mount point of its ext4 image: made on first use, mounted again
 * when it exists but is not mounted (after a reboot or a gateway restart). `workspace/` and
 * `home/` are owned by `0:Defaults.sandboxGid` with mode 2770, so every per-session user of
 * the slot works in them and new files keep the group. A slot directory that already holds
 * files but has no image (made before the ceiling existed) keeps working without a ceiling,
 * with a warning: mounting over it would hide its files.
 * @throws {SlotDirectoryError} when the ceiling cannot be put in place (not root, no loop
 * device, no mkfs.ext4): the message names `diskLimitBytes: 0` as the way out.
 */
/**
 * The process that last made a slot directory ready (its {@link currentInstanceId}), kept at
 * the directory's top, outside what containers bind: the reaper deletes a per-session
 * directory no container binds only when this names a process that is gone.
 */
export const SlotOwnerFile = ".owner";

export async function prepareSlotDirectory(
  slotDir: string,
  settings: SlotDirSettings,
  onWarning?: (message: string) => void,
): Promise<PreparedSlotDirectory> {
  const paths = slotPaths(slotDir);
  await privateDir(paths.sandboxesDir);
  await privateDir(paths.kindDir);
  if (settings.filesystem !== "bind") return { madeBoundDirs: false };
  await privateDir(slotDir);
  // The owner is recorded before anything else goes in, so a process killed while preparing
  // leaves a directory the reaper can judge (owner gone) or one with nothing in it.
  await writeOwnerFile(slotDir);
  if (settings.diskLimitBytes > 0 && !(await isMountPoint(slotDir))) {
    await attachDisk(slotDir, settings.diskLimitBytes, onWarning);
    await privateDir(slotDir);
    await writeOwnerFile(slotDir);
  }
  let madeBoundDirs = false;
  for (const name of BoundDirs) {
    if (await sandboxDir(slotDir, join(slotDir, name))) madeBoundDirs = true;
  }
  return { madeBoundDirs };
}

/**
 * Which `workspace/` and `home/` a slot has now (their device and inode numbers), to tell
 * whether the ones a running container binds were deleted (or their disk image replaced)
 * since: `undefined` for a slot without bound directories (`filesystem` other than `bind`),
 * `"gone"` when one is missing.
 */
export async function boundDirsIdentity(
  slotDir: string,
  settings: SlotDirSettings,
): Promise<string | undefined> {
  if (settings.filesystem !== "bind") return undefined;
  try {
    const found = await Promise.all(BoundDirs.map((name) => stat(join(slotDir, name))));
    return found.map((dir) => `${dir.dev}:${dir.ino}`).join(" ");
  } catch {
    return "gone";
  }
}

/** What {@link prepareSlotDirectory} found. */
export interface PreparedSlotDirectory {
  /**
   * `workspace/` or `home/` did not exist and was made now: a container of the slot that is
   * already running binds the ones that were there before (deleted since, or on a disk image
   * that was replaced), which a running container never sees again.
   */
  readonly madeBoundDirs: boolean;
}

/** The owner file's temporary name while it is written (renamed over {@link SlotOwnerFile}). */
export const SlotOwnerTemporary = `${SlotOwnerFile}.tmp`;

/**
 * Writes this process's id to the slot's owner file, whole or not at all (rename), unless it
 * holds that id already. On a slot disk the sandbox filled (its blocks or, with many small
 * files, its inodes) there is no room for the temporary: the id is then written over the
 * owner file in place, in the block and inode it has, so the slot gets a container again and
 * its user can delete what filled it (else only `/reset` would, with all of its files).
 */
async function writeOwnerFile(slotDir: string): Promise<void> {
  const id = currentInstanceId();
  const path = join(slotDir, SlotOwnerFile);
  if ((await readFile(path, "utf8").catch(() => undefined)) === id) return;
  const temporary = join(slotDir, SlotOwnerTemporary);
  try {
    await writeFile(temporary, id, { mode: 0o600 });
    await rename(temporary, path);
  } catch (error) {
    const code = codeOf(error);
    if (code !== "ENOSPC" && code !== "EDQUOT") throw error;
    await unlink(temporary).catch(() => undefined);
    const file = await open(path, "r+").catch(() => {
      throw error;
    });
    try {
      const bytes = Buffer.from(id);
      await file.write(bytes, 0, bytes.length, 0);
      await file.truncate(bytes.length);
    } finally {
      await file.close();
    }
  }
}

/** The owner file and its temporary: the gateway's own bookkeeping, not a sandbox's files. */
function isOwnerEntry(name: string): boolean {
  return name === SlotOwnerFile || name === SlotOwnerTemporary;
}

/**
 * True when a slot directory holds nothing a sandbox wrote: no entries but the owner file,
 * its temporary and empty `workspace/` and `home/`. What a process killed between making the
 * directory and recording its owner (or while deleting it) leaves; deleting it loses nothing.
 */
export async function isEmptySlotDirectory(slotDir: string): Promise<boolean> {
  const names = await readdir(slotDir).catch(() => undefined);
  if (names === undefined) return false;
  for (const name of names) {
    if (isOwnerEntry(name)) continue;
    if (!(BoundDirs as readonly string[]).includes(name)) return false;
    const inner = await readdir(join(slotDir, name)).catch(() => undefined);
    if (inner === undefined || inner.length > 0) return false;
  }
  return true;
}

async function attachDisk(
  slotDir: string,
  sizeBytes: number,
  onWarning?: (message: string) => void,
): Promise<void> {
  const { image, diskDir } = slotPaths(slotDir);
  const hasImage = await access(image).then(
    () => true,
    () => false,
  );
  if (!hasImage && (await readdir(slotDir)).some((name) => !isOwnerEntry(name))) {
    onWarning?.(
      `slot directory ${slotDir} was made before its disk ceiling and keeps its files without ` +
        "one; reset the slot (its files are deleted) to give it the ceiling",
    );
    return;
  }
  const fix =
    "A disk ceiling is a loop-mounted ext4 image: the gateway must run as root with loop " +
    "devices (/dev/loop-control) and mkfs.ext4 (e2fsprogs). To run without a per-slot disk " +
    "ceiling, set profiles[].sandbox.diskLimitBytes: 0.";
  const obstacle = diskCeilingObstacle();
  if (obstacle !== undefined) {
    throw new SlotDirectoryError(
      "prepare",
      slotDir,
      `cannot give slot directory ${slotDir} its disk ceiling: ${obstacle}. ${fix}`,
    );
  }
  try {
    await privateDir(diskDir);
    if (!hasImage) await createDiskImage(image, sizeBytes);
    await mountDiskImage(image, slotDir);
  } catch (error) {
    // An image that is there but holds no ext4 file system any more (overwritten, cut short)
    // is no question of root or loop devices: diskLimitBytes: 0 would not bring the files
    // back, and would run every slot without its ceiling.
    if (hasImage && (await lacksExt4Superblock(image))) {
      throw new SlotDirectoryError(
        "prepare",
        slotDir,
        `cannot give slot directory ${slotDir} its disk ceiling: its disk image ${image} holds no ext4 file system (damaged or overwritten; ${messageOf(error)}). /reset deletes the slot's files with the image, and the next command makes a new one; to try to recover them first, stop the gateway and run e2fsck ${image} (it names the backup superblocks to try with -b)`,
        { cause: error },
      );
    }
    throw new SlotDirectoryError(
      "prepare",
      slotDir,
      `cannot give slot directory ${slotDir} its disk ceiling: ${messageOf(error)}. ${fix}`,
      { cause: error },
    );
  }
}

/**
 * Deletes a slot directory, under the slot's lock and after its containers are gone, so that
 * nothing outside it can be touched whatever a container did to its contents. A mounted disk
 * image is unmounted (not lazily: a filesystem still in use stays) and unlinked, which
 * removes everything in it without walking it. Anything else inside the directory is removed
 * by `rm` in a throwaway container that mounts only this directory
 * ({@link deleteInContainer}); only the empty directory is removed on the host. Fails closed:
 * when a step cannot run, what is left stays in place and a {@link SlotDirectoryError} says
 * why; no host-side path walk is ever tried instead.
 */
export async function deleteSlotDirectory(
  slotDir: string,
  context: ContainedDeleteContext,
): Promise<void> {
  const { image } = slotPaths(slotDir);
  const fail = (what: string, error: unknown): never => {
    throw new SlotDirectoryError(
      "delete",
      slotDir,
      `slot directory ${slotDir} was left in place: ${what}: ${messageOf(error)}`,
      { cause: error },
    );
  };
  await unmountAll(slotDir).catch((error: unknown) => fail("could not unmount its disk", error));
  const names = await readdir(slotDir).catch((error: unknown) => {
    if (codeOf(error) === "ENOENT") return undefined;
    return fail("could not list it", error);
  });
  if (names !== undefined) {
    // The owner file goes last, on the host (containers never bind the slot's top): a
    // process killed half-way leaves what is left still marked as its own, for the reaper.
    const contents = names.filter((name) => !isOwnerEntry(name));
    if (contents.length > 0) {
      await deleteInContainer(context, slotDir, contents).catch((error: unknown) =>
        fail("the delete container failed", error),
      );
    }
    for (const name of names.filter(isOwnerEntry)) {
      await unlink(join(slotDir, name)).catch((error: unknown) => {
        if (codeOf(error) !== "ENOENT") fail("could not remove its owner file", error);
      });
    }
    await rmdir(slotDir).catch((error: unknown) => {
      if (codeOf(error) !== "ENOENT") fail("could not remove it", error);
    });
  }
  await unlink(image).catch((error: unknown) => {
    if (codeOf(error) !== "ENOENT") fail("could not remove its disk image", error);
  });
}

/** Makes `dir` (and missing parents) 0700, or sets an existing one to 0700. */
async function privateDir(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
}

/**
 * `workspace/` or `home/`: a real directory (never a link), `0:sandboxGid` mode 2770. A
 * gateway that is not root cannot hand it to the group and keeps it as its own, 2770.
 * Answers whether it was made now.
 */
async function sandboxDir(slotDir: string, dir: string): Promise<boolean> {
  const made = await mkdir(dir, { mode: 0o770 }).then(
    () => true,
    (error: unknown) => {
      if (codeOf(error) !== "EEXIST") throw error;
      return false;
    },
  );
  if (!(await lstat(dir)).isDirectory()) {
    throw new SlotDirectoryError("prepare", slotDir, `${dir} is not a directory`);
  }
  if (process.getuid?.() === 0) await chown(dir, 0, Defaults.sandboxGid);
  await chmod(dir, 0o2770);
  return made;
}
