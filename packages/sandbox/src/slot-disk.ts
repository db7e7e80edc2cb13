import { execFile } from "node:child_process";
import { lstat, open, readFile, realpath, unlink } from "node:fs/promises";
import { Defaults } from "./defaults.js";

/**
 * A slot's disk ceiling: a sparse ext4 image of `diskLimitBytes`, loop-mounted `nosuid,nodev`
 * on the slot directory, so `workspace/` and `home/` live inside it. Writing past it fails
 * with ENOSPC inside the container; the host file never grows past the image size. (The
 * engine's own `--storage-opt size=` needs overlay2 on xfs with project quotas, and binds
 * have no size at all.) Deleting is unmount and unlink: nothing walks the slot's files.
 */

/** Mount options: no setuid binaries or device nodes from the slot; no inode-table zeroing
 * thread (the sparse image already reads as zeros); freed blocks are given back to the host. */
const MountOptions = "loop,nosuid,nodev,noinit_itable,discard";

/** Runs a system tool bounded by `Defaults.mountTimeoutMs`; rejects with its stderr. */
function runTool(command: string, args: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { timeout: Defaults.mountTimeoutMs, killSignal: "SIGKILL" },
      (error, _stdout, stderr) => {
        if (error === null) return resolve();
        const said = String(stderr).trim();
        const detail = said.length > 0 ? said : error.message;
        reject(new Error(`${command} ${args.join(" ")}: ${detail}`, { cause: error }));
      },
    );
  });
}

/** Why this process cannot make or mount disk images, or `undefined` when it can try. */
export function diskCeilingObstacle(): string | undefined {
  const uid = process.getuid?.();
  if (uid !== 0) return `mounting a disk image needs root and the gateway runs as uid ${uid}`;
  return undefined;
}

/** Mount points of this process's mount namespace (from /proc/self/mountinfo, unescaped). */
async function mountPoints(): Promise<string[]> {
  const info = await readFile("/proc/self/mountinfo", "utf8");
  return info
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) =>
      (line.split(" ")[4] ?? "").replace(/\\([0-7]{3})/g, (_, octal: string) =>
        String.fromCharCode(Number.parseInt(octal, 8)),
      ),
    );
}

/** Whether a filesystem is mounted exactly at `dir`. */
export async function isMountPoint(dir: string): Promise<boolean> {
  const real = await realpath(dir).catch(() => undefined);
  if (real === undefined) return false;
  return (await mountPoints()).includes(real);
}

/**
 * Makes a sparse image of `sizeBytes` and formats it ext4: no blocks reserved for root (the
 * ceiling is the ceiling), inode tables and journal left unzeroed (the file stays sparse; a
 * few MiB on the host until the slot writes). A half-made image is removed.
 */
export async function createDiskImage(image: string, sizeBytes: number): Promise<void> {
  const file = await open(image, "wx", 0o600);
  try {
    await file.truncate(sizeBytes);
  } finally {
    await file.close();
  }
  try {
    await runTool("mkfs.ext4", [
      "-q",
      "-F",
      "-m",
      "0",
      "-E",
      "lazy_itable_init=1,lazy_journal_init=1,root_owner=0:0",
      image,
    ]);
  } catch (error) {
    await unlink(image).catch(() => undefined);
    throw error;
  }
}

/** Where an ext4 superblock keeps its magic number, 0xEF53 little-endian (fs/ext4/ext4.h). */
const Ext4MagicOffset = 1024 + 0x38;

/**
 * Whether `image` is a regular file without an ext4 superblock at its start (its primary
 * one; the backups further in are what `e2fsck -b` recovers from): overwritten or cut short.
 * Anything that cannot be read, or is no regular file, is not judged here (`false`).
 */
export async function lacksExt4Superblock(image: string): Promise<boolean> {
  try {
    if (!(await lstat(image)).isFile()) return false;
    const file = await open(image, "r");
    try {
      const magic = Buffer.alloc(2);
      const { bytesRead } = await file.read(magic, 0, 2, Ext4MagicOffset);
      return bytesRead < 2 || magic.readUInt16LE(0) !== 0xef53;
    } finally {
      await file.close();
    }
  } catch {
    return false;
  }
}

/** Loop-mounts `image` on `dir` (`nosuid,nodev`); the loop device goes with the unmount. */
export async function mountDiskImage(image: string, dir: string): Promise<void> {
  await runTool("mount", ["-t", "ext4", "-o", MountOptions, image, dir]);
}

/**
 * Unmounts whatever is mounted at `dir`, not lazily: a filesystem still in use (a host
 * process inside it) fails here and the caller leaves everything in place.
 */
export async function unmountAll(dir: string): Promise<void> {
  for (let depth = 0; depth < 8 && (await isMountPoint(dir)); depth++) {
    await runTool("umount", [dir]);
  }
  if (await isMountPoint(dir)) throw new Error(`${dir} is still a mount point`);
}

/**
 * Moves the disk mounted at `from` to `to` (an empty directory): a bind mount of `from` at
 * `to` (same filesystem, same `nosuid,nodev`), then `from` unmounted. A mount point cannot be
 * renamed (`EBUSY`), and `mount --move` is refused under a shared parent mount. Containers that
 * bind directories inside the disk keep them: their mounts are their own.
 */
export async function moveDiskMount(from: string, to: string): Promise<void> {
  await runTool("mount", ["--bind", from, to]);
  try {
    await runTool("umount", [from]);
  } catch (error) {
    await runTool("umount", [to]).catch(() => undefined);
    throw error;
  }
}
