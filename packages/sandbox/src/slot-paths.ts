import { basename, dirname, join } from "node:path";

/** Where a slot directory's companions live, beside its `<home>/sandboxes/<kind>/` root. */
export interface SlotPaths {
  /** `<home>/sandboxes/<kind>/<name>`: the slot directory (`workspace/`, `home/`). */
  readonly slotDir: string;
  /** `<home>/sandboxes`. */
  readonly sandboxesDir: string;
  /** `<home>/sandboxes/<kind>`, the parent of the slot directory. */
  readonly kindDir: string;
  /** `<home>/sandboxes/locks/<kind>`. */
  readonly lockDir: string;
  /** `<lockDir>/<name>.lock`, the cross-process lock (a directory proper-lockfile makes). */
  readonly lockFile: string;
  /** `<home>/sandboxes/disks/<kind>`. */
  readonly diskDir: string;
  /** `<diskDir>/<name>.ext4`, the slot's disk image when it has a disk ceiling. */
  readonly image: string;
}

/**
 * The paths that belong to a slot directory `<home>/sandboxes/<kind>/<name>`. Locks and disk
 * images live in their own trees rather than beside the slot (`<name>.lock` there could be
 * another slot's verbatim name), and never inside it (a container could reach them).
 */
export function slotPaths(slotDir: string): SlotPaths {
  const kindDir = dirname(slotDir);
  const sandboxesDir = dirname(kindDir);
  const kind = basename(kindDir);
  const name = basename(slotDir);
  const lockDir = join(sandboxesDir, "locks", kind);
  const diskDir = join(sandboxesDir, "disks", kind);
  return {
    slotDir,
    sandboxesDir,
    kindDir,
    lockDir,
    lockFile: join(lockDir, `${name}.lock`),
    diskDir,
    image: join(diskDir, `${name}.ext4`),
  };
}
