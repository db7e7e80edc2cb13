import { execFile } from "node:child_process";
import { mkdir, mkdtemp, open, rm, truncate, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Whether this process can make loop filesystems (root, with mkfs.ext4 on the PATH). */
export async function canMountLoopDisks(): Promise<boolean> {
  if (process.geteuid?.() !== 0) return false;
  return run("mkfs.ext4", ["-V"]).then(
    () => true,
    () => false,
  );
}

/**
 * A small ext4 filesystem in an image file, loop-mounted: a home disk the test can fill up
 * and free again. `dispose()` unmounts it (the loop device goes with it) and deletes the image.
 */
export class LoopDisk {
  static readonly FillerName = "filler";

  private constructor(
    private readonly dir: string,
    /** Where it is mounted (mode 0700). */
    readonly mountPoint: string,
  ) {}

  /** Makes and mounts a `sizeBytes` ext4 (no blocks reserved for root: full means full). */
  static async create(sizeBytes: number): Promise<LoopDisk> {
    const dir = await mkdtemp(join(tmpdir(), "mediagate-loopdisk-"));
    const image = join(dir, "disk.ext4");
    const mountPoint = join(dir, "mnt");
    await writeFile(image, "");
    await truncate(image, sizeBytes);
    await run("mkfs.ext4", ["-F", "-q", "-m", "0", image]);
    await mkdir(mountPoint, { mode: 0o700 });
    try {
      await run("mount", ["-o", "loop", image, mountPoint]);
    } catch (error) {
      await rm(dir, { recursive: true, force: true });
      throw error;
    }
    await run("chmod", ["700", mountPoint]);
    return new LoopDisk(dir, mountPoint);
  }

  /** Writes a filler file until the filesystem refuses (ENOSPC); returns the bytes written. */
  async fill(): Promise<number> {
    const file = await open(join(this.mountPoint, LoopDisk.FillerName), "a");
    let written = 0;
    try {
      for (const size of [1024 * 1024, 64 * 1024, 4096, 512]) {
        const chunk = Buffer.alloc(size, 0x5a);
        for (;;) {
          const done = await file.write(chunk).then(
            (r) => r.bytesWritten,
            (error: NodeJS.ErrnoException) => {
              if (error.code === "ENOSPC") return 0;
              throw error;
            },
          );
          written += done;
          if (done < size) break;
        }
      }
      await file.sync().catch(() => {});
    } finally {
      await file.close();
    }
    return written;
  }

  /** Deletes the filler: the space is back. */
  async free(): Promise<void> {
    await rm(join(this.mountPoint, LoopDisk.FillerName), { force: true });
    await run("sync", []);
  }

  /** Unmounts (lazily when something still holds it) and deletes the image. */
  async dispose(): Promise<void> {
    await run("umount", [this.mountPoint]).catch(() => run("umount", ["-l", this.mountPoint]));
    await rm(this.dir, { recursive: true, force: true });
  }
}
