import { randomBytes } from "node:crypto";
import { sleep } from "@mediagate/io";
import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { containerName, createOptions } from "./container-spec.js";
import { findSlotContainers, removeContainer } from "./containers.js";
import { Defaults } from "./defaults.js";
import { isNotFound, statusOf } from "./docker-errors.js";
import { ImageMissingError } from "./errors.js";
import { RootUser, userModeOf } from "./exec-user.js";
import { type ContainerOwner, keepsSlotDirs } from "./labels.js";
import { execOnce } from "./one-shot-exec.js";
import { ownerIsGone } from "./reaper.js";
import { prepareSlotDirectory } from "./slot-dirs.js";
import type { SandboxSettings } from "./types.js";

export interface ProvisionContext {
  readonly docker: Docker;
  /** The install and profile the container belongs to (labels, name, lookup). */
  readonly owner: ContainerOwner;
  readonly slot: string;
  readonly slotDir: string;
  readonly settings: SandboxSettings;
  /** Bound of each Docker call, and the acquire's signal. */
  readonly bound: CallBound;
  /**
   * Receives a uniquely named container (id or name) this provisioning gave up on while the
   * daemon may still make or hold it (a create or start that got no answer in time), so
   * the caller removes it once the daemon answers again. Containers with the deterministic
   * name are not handed over: the next probe (of any process) adopts them.
   */
  readonly onAbandoned?: ((idOrName: string) => void) | undefined;
  /** Told about a slot directory that keeps working without its disk ceiling. */
  readonly onWarning?: ((message: string) => void) | undefined;
}

/**
 * Finds or makes the container of a slot (docs/sandbox.md). With `persistAcrossProcesses`, the
 * labelled containers are probed first: a running one is reused, a paused one unpaused, a
 * stopped one started; one that cannot be started is removed and replaced, and so is a
 * scratch container whose owning process is gone (its slot dir is kept and bound again). A create that
 * loses a race with another process (409 on the deterministic name) probes again.
 * Without it, no probe happens and a fresh, uniquely named container is made. The slot
 * directory is made ready first (its disk image mounted again after a reboot), before any
 * container, new or reused, binds it. Runs under the slot's lock.
 */
export async function provisionContainer(context: ProvisionContext): Promise<string> {
  const { madeBoundDirs } = await prepareSlotDirectory(
    context.slotDir,
    context.settings,
    context.onWarning,
  );
  const id = await findOrCreate(context, madeBoundDirs);
  await prepareTmpfs(context, id);
  return id;
}

/** `staleIfLive`: the slot's bound directories were made anew, see {@link reuseExisting}. */
async function findOrCreate(context: ProvisionContext, staleIfLive: boolean): Promise<string> {
  if (!context.settings.persistAcrossProcesses) {
    return createAndStart(context, randomBytes(4).toString("hex"));
  }
  for (let attempt = 0; ; attempt++) {
    context.bound.signal?.throwIfAborted();
    const reused = await reuseExisting(context, attempt === 0 && staleIfLive);
    if (reused !== undefined) return reused;
    try {
      return await createAndStart(context, undefined);
    } catch (error) {
      if (statusOf(error) !== 409 || attempt >= 8) throw error;
      await sleep(20 + Math.floor(Math.random() * 80));
    }
  }
}

/**
 * tmpfs `/workspace` and `/root` for per-session users: `0:sandboxGid`, mode 2770, as bind
 * slots get on the host. The engine copies the image directory's owner and mode onto a tmpfs
 * mount point when the container starts (its `mode=`/`gid=` options do not survive that), so
 * root sets them in the running container, after every start.
 */
async function prepareTmpfs(context: ProvisionContext, containerId: string): Promise<void> {
  const { settings } = context;
  if (settings.filesystem !== "tmpfs" || !userModeOf(settings).perSession) return;
  const dirs = ["/workspace", "/root"];
  const script = `chown 0:${Defaults.sandboxGid} ${dirs.join(" ")} && chmod 2770 ${dirs.join(" ")}`;
  const result = await execOnce(context.docker, containerId, ["sh", "-c", script], {
    timeoutMs: context.bound.timeoutMs,
    killOnStop: false,
    user: RootUser,
  });
  if (result.exitCode !== 0) {
    throw new Error(
      `could not prepare the tmpfs mounts for the sandbox group (exit code ${result.exitCode}): ${result.stderr.trim().slice(0, 200)}`,
    );
  }
}

/**
 * `staleIfLive`: the slot's `workspace/` or `home/` was just made anew (the slot directory
 * was deleted, or its disk image replaced, while a container of it kept running). A running
 * or paused container still binds the old directories, where every command then fails
 * ("current working directory is outside of container mount namespace root"), so it is
 * replaced; a stopped one binds the new ones when it starts.
 */
async function reuseExisting(
  context: ProvisionContext,
  staleIfLive: boolean,
): Promise<string | undefined> {
  const { docker, bound } = context;
  const listed = await findSlotContainers(docker, context.owner, context.slot, bound);
  // A scratch container belongs to the process that made it (its idle timer, its shutdown);
  // one whose process is gone is replaced, not adopted, so the owner label of a scratch
  // container in use always names a live process and the reaper never removes it.
  const found: typeof listed = [];
  for (const candidate of listed) {
    const live = candidate.State === "running" || candidate.State === "paused";
    if (staleIfLive && live) await removeContainer(docker, candidate.Id, true, bound);
    else if (keepsSlotDirs(candidate.Labels) || !ownerIsGone(candidate.Labels))
      found.push(candidate);
    else await removeContainer(docker, candidate.Id, true, bound);
  }
  const running = found.find((c) => c.State === "running");
  if (running !== undefined) return running.Id;
  for (const candidate of found) {
    context.bound.signal?.throwIfAborted();
    const container = docker.getContainer(candidate.Id);
    try {
      const wake = candidate.State === "paused" ? "unpause" : "start";
      await boundedCall(
        wake,
        bound,
        (abortSignal) =>
          wake === "unpause"
            ? container.unpause({ abortSignal })
            : container.start({ abortSignal }),
        candidate.Id,
      );
      return candidate.Id;
    } catch (error) {
      if (statusOf(error) === 304) return candidate.Id;
      // A concurrent starter (another process) may have won; only a container that is
      // still not running after the failed start is broken and gets replaced.
      const state = await boundedCall(
        "inspect",
        bound,
        (abortSignal) => container.inspect({ abortSignal }),
        candidate.Id,
      ).catch(() => undefined);
      if (state?.State.Running === true) return candidate.Id;
      await removeContainer(docker, candidate.Id, true, bound);
    }
  }
  return undefined;
}

async function createAndStart(
  context: ProvisionContext,
  unique: string | undefined,
): Promise<string> {
  const { docker, settings, slotDir, bound } = context;
  context.bound.signal?.throwIfAborted();
  const name = containerName(context.owner, context.slot, unique);
  let container: Docker.Container;
  const spec = createOptions({
    owner: context.owner,
    slot: context.slot,
    slotDir,
    settings,
    name,
  });
  try {
    container = await boundedCall("create container", bound, (abortSignal) =>
      docker.createContainer({ ...spec, abortSignal }),
    );
  } catch (error) {
    if (isNotFound(error)) throw new ImageMissingError(settings.image, { cause: error });
    // The daemon may still make it: the request was cut, not refused.
    if (unique !== undefined && statusOf(error) === undefined) context.onAbandoned?.(name);
    throw error;
  }
  try {
    await boundedCall(
      "start",
      bound,
      (abortSignal) => container.start({ abortSignal }),
      container.id,
    );
  } catch (error) {
    // 304: another process that lost the name race started it for us.
    if (statusOf(error) === 304) return container.id;
    const removed = await removeContainer(docker, container.id, true, bound).then(
      () => true,
      () => false,
    );
    if (!removed && unique !== undefined) context.onAbandoned?.(container.id);
    throw error;
  }
  return container.id;
}
