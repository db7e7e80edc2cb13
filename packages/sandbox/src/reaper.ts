import { readdir, readFile } from "node:fs/promises";
import { basename, dirname, join, relative, sep } from "node:path";
import type Docker from "dockerode";
import { boundedCall } from "./bounded-call.js";
import { profileFilters, removeContainer } from "./containers.js";
import { Defaults } from "./defaults.js";
import { messageOf } from "./docker-errors.js";
import { instanceLiveness } from "./instance.js";
import { type ContainerOwner, keepsSlotDirs, LabelKeys } from "./labels.js";
import { isEmptySlotDirectory, SlotOwnerFile } from "./slot-dirs.js";
import { slotRootOf } from "./slot-key.js";
import { isThrowaway, throwawayFilters } from "./throwaway-container.js";
import { parseDockerTime } from "./timestamps.js";
import type { ReapResult } from "./types.js";

/**
 * The default age (seconds) beyond which an exited container is an orphan:
 * `2 × max(Defaults.reaperMinLifetimeSeconds, lifetimeSeconds)`. `mediagate sandbox reap
 * --older-than` replaces it.
 */
export function reapAgeSeconds(lifetimeSeconds: number): number {
  return 2 * Math.max(Defaults.reaperMinLifetimeSeconds, lifetimeSeconds);
}

/**
 * True when an exited container finished more than `minAgeSeconds` ago. A zero
 * (`0001-01-01…`) or unparseable `FinishedAt` is never reaped: its age is unknown.
 */
export function isReapable(finishedAt: unknown, now: Date, minAgeSeconds: number): boolean {
  const finished = parseDockerTime(finishedAt);
  if (finished === undefined) return false;
  return now.getTime() - finished.getTime() > minAgeSeconds * 1000;
}

export interface SweepContext {
  readonly docker: Docker;
  /** Only this install's containers of this profile are swept. */
  readonly owner: ContainerOwner;
  /** An exited container is removed once it finished more than this long ago. */
  readonly minAgeSeconds: number;
  readonly now: Date;
  /** Roots under which a reaped container's slot dir may be deleted. */
  readonly sandboxRoots: readonly string[];
  /** Bound on each Docker call. Default `Defaults.operationTimeoutMs`. */
  readonly timeoutMs?: number;
  /** Removal step; the default removes the container. Replaceable for failure tests. */
  readonly remove?: (id: string) => Promise<void>;
  /**
   * Deletes a reaped scratch container's slot directory: takes the directory's lock, asks
   * `inUse` (another container of the slot, made since, still binds it) and deletes it only
   * when not. `image` is the reaped container's image, which the delete container runs.
   * Without it no directory is deleted.
   */
  readonly deleteSlotDir?: (
    slotDir: string,
    image: string,
    inUse: () => Promise<boolean>,
  ) => Promise<void>;
}

/**
 * One sweep (docs/sandbox.md): exited containers labelled `mediagate.agent=1` of this install and
 * this profile only, finished more than `minAgeSeconds` ago, are removed, and so are the
 * profile's throwaway containers of every kind (`ThrowawayKinds`: deletes and kills)
 * that exited (or were made and never started) more than `minAgeSeconds` ago: their gateway is done with them, but a removal that failed (or
 * a create whose answer never came) left them behind. The slot directory (found from the
 * `/workspace` bind) goes with them only for scratch slots (session and task-id slots):
 * the dirs of `default`, `profile:<name>` and `shared:<key>` slots are the persistent
 * workspace and home the next container binds again, so they are kept
 * ({@link keepsSlotDirs}). A slot directory is deleted under its lock, only while no other
 * container of the slot exists, and where no link leads out of it (`deleteSlotDir`); one that
 * could not be deleted stays and is reported. Running containers are never listed. A failure
 * is recorded and the sweep goes on.
 */
export async function sweepOrphans(context: SweepContext): Promise<ReapResult> {
  const { docker } = context;
  const bound = { timeoutMs: context.timeoutMs ?? Defaults.operationTimeoutMs };
  const remove = context.remove ?? ((id: string) => removeContainer(docker, id, false, bound));
  const result: ReapResult = { removed: [], failed: [] };
  const filters = { label: profileFilters(context.owner), status: ["exited"] };
  const exited = await boundedCall("list containers", bound, (abortSignal) =>
    docker.listContainers({ all: true, filters, abortSignal }),
  );
  const helpers: Docker.ContainerInfo[] = [];
  for (const label of throwawayFilters(context.owner)) {
    const filters = { label, status: ["exited", "created"] };
    const listed = await boundedCall("list containers", bound, (abortSignal) =>
      docker.listContainers({ all: true, filters, abortSignal }),
    );
    helpers.push(...listed);
  }
  for (const summary of [...exited, ...helpers]) {
    let info: Docker.ContainerInspectInfo;
    try {
      info = await boundedCall(
        "inspect",
        bound,
        (abortSignal) => docker.getContainer(summary.Id).inspect({ abortSignal }),
        summary.Id,
      );
      if (!isDone(info)) continue;
      const since = info.State.Status === "created" ? info.Created : info.State.FinishedAt;
      if (!isReapable(since, context.now, context.minAgeSeconds)) continue;
      await remove(summary.Id);
      result.removed.push(summary.Id);
    } catch (error) {
      result.failed.push({ id: summary.Id, error: messageOf(error) });
      continue;
    }
    const slotDir = keepsSlotDirs(info.Config.Labels)
      ? undefined
      : slotDirOfMounts(info.Mounts, context.sandboxRoots);
    if (slotDir === undefined || context.deleteSlotDir === undefined) continue;
    const labels = info.Config.Labels ?? {};
    try {
      await context.deleteSlotDir(slotDir, info.Image, () => slotStillUsed(docker, labels, bound));
    } catch (error) {
      result.failed.push({ id: summary.Id, error: `container removed: ${messageOf(error)}` });
    }
  }
  return result;
}

/**
 * Whether an inspected container is finished with: exited, or a throwaway container that was
 * made and never started (a slot's container in that state is about to be started).
 */
function isDone(info: Docker.ContainerInspectInfo): boolean {
  if (info.State.Running) return false;
  if (info.State.Status === "exited") return true;
  return info.State.Status === "created" && isThrowaway(info.Config.Labels);
}

/** What {@link sweepGoneOwners} needs. */
export interface OwnerSweepContext {
  readonly docker: Docker;
  /** Only this install's containers of this profile are swept. */
  readonly owner: ContainerOwner;
  /** Roots under which a reaped container's slot dir may be deleted. */
  readonly sandboxRoots: readonly string[];
  /** Bound on each Docker call. */
  readonly timeoutMs: number;
  /** Runs `fn` holding the slot directory's lock (shared with provisioning). */
  readonly locked: <T>(slotDir: string, fn: () => Promise<T>) => Promise<T>;
  /** Deletes a slot directory where no link leads out of it; called under its lock. */
  readonly deleteSlotDir: (slotDir: string, image: string) => Promise<void>;
}

/**
 * Whether a container's owner label names a process that is gone. A container without the
 * label (made before it existed), or whose owner cannot be judged from here (another host,
 * a malformed value), is never an orphan by this rule.
 */
export function ownerIsGone(labels: Readonly<Record<string, string>> | undefined): boolean {
  const owner = labels?.[LabelKeys.owner];
  return owner !== undefined && instanceLiveness(owner) === "gone";
}

/**
 * Removes this install's and this profile's containers whose owning process is gone, in any
 * state (running ones too: their idle timers died with their process): scratch containers
 * (session and task-id slots, `persistent` = `"0"`) with their slot directories, and
 * throwaway containers of every kind. A slot's container is removed and its directory
 * deleted under the directory's lock, the directory only when no other container of the
 * slot exists by then. Containers of persistent slots are reused by any process and never swept here;
 * a live (or unknown) owner's containers are never touched. A failure is recorded and the
 * sweep goes on.
 */
export async function sweepGoneOwners(context: OwnerSweepContext): Promise<ReapResult> {
  const { docker } = context;
  const bound = { timeoutMs: context.timeoutMs };
  const result: ReapResult = { removed: [], failed: [] };
  const ours = profileFilters(context.owner);
  const scratch = [...ours, `${LabelKeys.persistent}=0`];
  const found: Docker.ContainerInfo[] = [];
  for (const label of [scratch, ...throwawayFilters(context.owner)]) {
    const listed = await boundedCall("list containers", bound, (abortSignal) =>
      docker.listContainers({ all: true, filters: { label }, abortSignal }),
    );
    found.push(...listed.filter((c) => ownerIsGone(c.Labels)));
  }
  for (const summary of found) {
    const slotDir =
      summary.Labels[LabelKeys.agent] === "1" && !keepsSlotDirs(summary.Labels)
        ? slotDirOfMounts(summary.Mounts, context.sandboxRoots)
        : undefined;
    const remove = () => removeContainer(docker, summary.Id, true, bound);
    try {
      if (slotDir === undefined) {
        await remove();
      } else {
        await context.locked(slotDir, async () => {
          await remove();
          if (!(await slotStillUsed(docker, summary.Labels, bound))) {
            await context.deleteSlotDir(slotDir, summary.Image);
          }
        });
      }
      result.removed.push(summary.Id);
    } catch (error) {
      result.failed.push({ id: summary.Id, error: messageOf(error) });
    }
  }
  return result;
}

/**
 * Whether a container of the reaped one's slot (same install, profile and slot hash, or slot
 * label for containers older than the hash) still exists: its directory is then in use.
 */
async function slotStillUsed(
  docker: Docker,
  labels: Readonly<Record<string, string>>,
  bound: { timeoutMs: number },
): Promise<boolean> {
  const hash = labels[LabelKeys.slotHash];
  const install = labels[LabelKeys.install];
  // Any replica's container counts (docs/cluster.md): replicas whose homes share one
  // directory never delete a directory another one's container binds.
  const filters = [
    `${LabelKeys.agent}=1`,
    ...(install === undefined ? [] : [`${LabelKeys.install}=${install}`]),
    `${LabelKeys.profile}=${labels[LabelKeys.profile] ?? ""}`,
    hash === undefined
      ? `${LabelKeys.slot}=${labels[LabelKeys.slot] ?? ""}`
      : `${LabelKeys.slotHash}=${hash}`,
  ];
  const found = await boundedCall("list containers", bound, (abortSignal) =>
    docker.listContainers({ all: true, filters: { label: filters }, abortSignal }),
  );
  return found.length > 0;
}

/** The slot dir behind a `/workspace` bind, only if it lies directly under a sandbox root. */
export function slotDirOfMounts(
  mounts: readonly { Type?: string; Source: string; Destination: string }[] | undefined,
  roots: readonly string[],
): string | undefined {
  const workspace = mounts?.find((m) => m.Destination === "/workspace" && m.Type === "bind");
  if (workspace === undefined) return undefined;
  const slotDir = dirname(workspace.Source);
  const inside = roots.some((root) => {
    const rel = relative(root, slotDir);
    return rel.length > 0 && !rel.startsWith("..") && !rel.includes(sep);
  });
  return inside ? slotDir : undefined;
}

/**
 * A per-session slot directory no live process stands behind: its owner file names a process
 * that is gone, or it holds nothing a sandbox wrote ({@link isEmptySlotDirectory}).
 */
async function isDebris(slotDir: string): Promise<boolean> {
  const owner = await readFile(join(slotDir, SlotOwnerFile), "utf8").catch(() => undefined);
  if (owner !== undefined) return instanceLiveness(owner.trim()) === "gone";
  return isEmptySlotDirectory(slotDir);
}

/** What {@link sweepContainerlessScratchDirs} needs. */
export interface ScratchDirSweepContext {
  readonly docker: Docker;
  /** Only this install's containers of this profile count as users of a directory. */
  readonly owner: ContainerOwner;
  /** The profile's slot root (`<profileHome>/sandboxes/docker`). */
  readonly slotRoot: string;
  readonly timeoutMs: number;
  readonly locked: <T>(slotDir: string, fn: () => Promise<T>) => Promise<T>;
  readonly deleteSlotDir: (slotDir: string) => Promise<void>;
  /** Directories never deleted (a pending reply's files are in them). */
  readonly kept?: ReadonlySet<string> | undefined;
  /** Only this directory is considered (it may be gone already). */
  readonly only?: string | undefined;
}

/** Slot directories of per-session slots start with this (the sanitized `session:` kind). */
const SessionDirPrefix = "session_";

/**
 * Deletes the per-session slot directories no container binds and whose last provisioning
 * process is gone: what a process killed between making a session's directory and making its
 * container leaves (no container, so no owner label, leads to it). Such a directory is
 * scratch: per-session containers take their directory with them. Each is checked again under its lock, which provisioning
 * holds from the directory to the container, so a directory a live process is provisioning
 * right now is never deleted. Persistent slot directories are never considered.
 */
export async function sweepContainerlessScratchDirs(
  context: ScratchDirSweepContext,
): Promise<ReapResult> {
  const result: ReapResult = { removed: [], failed: [] };
  let names: string[];
  try {
    const { only } = context;
    names = (
      only === undefined
        ? await readdir(context.slotRoot)
        : dirname(only) === context.slotRoot
          ? [basename(only)]
          : []
    ).filter(
      (name) =>
        name.startsWith(SessionDirPrefix) &&
        context.kept?.has(join(context.slotRoot, name)) !== true,
    );
  } catch {
    return result;
  }
  if (names.length === 0) return result;
  const bound = { timeoutMs: context.timeoutMs };
  const boundDirs = async (): Promise<Set<string>> => {
    const listed = await boundedCall("list containers", bound, (abortSignal) =>
      context.docker.listContainers({
        all: true,
        // Every replica's containers count as users of a directory (see slotStillUsed).
        filters: { label: profileFilters({ ...context.owner, replica: undefined }) },
        abortSignal,
      }),
    );
    const dirs = new Set<string>();
    for (const c of listed) {
      const dir = slotDirOfMounts(c.Mounts, [context.slotRoot]);
      if (dir !== undefined) dirs.add(dir);
    }
    return dirs;
  };
  const inUse = await boundDirs();
  for (const name of names) {
    const slotDir = join(context.slotRoot, name);
    if (inUse.has(slotDir)) continue;
    // Only what a process that is gone provisioned, or a directory with nothing in it (a
    // process killed before it recorded itself, or while deleting): a directory of an older
    // version (no owner file; its files are kept for the session's next container) or of a
    // live process is left alone.
    if (!(await isDebris(slotDir))) continue;
    try {
      const deleted = await context.locked(slotDir, async () => {
        if ((await boundDirs()).has(slotDir) || !(await isDebris(slotDir))) return false;
        await context.deleteSlotDir(slotDir);
        return true;
      });
      if (deleted) result.removed.push(slotDir);
    } catch (error) {
      result.failed.push({ id: slotDir, error: messageOf(error) });
    }
  }
  return result;
}

/**
 * The directories under which slot dirs live, for a profile home and the root home, and the
 * data slots' own root when they live outside the homes.
 */
export function sandboxRootsOf(
  profileHome: string,
  rootHome: string,
  dataSlotsRoot?: string,
): string[] {
  const roots = [slotRootOf(profileHome), slotRootOf(rootHome)];
  return dataSlotsRoot === undefined ? roots : [...roots, slotRootOf(dataSlotsRoot)];
}
