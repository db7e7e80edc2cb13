import { randomBytes } from "node:crypto";
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { containerName, createOptions } from "./container-spec.js";
import { findSlotContainers, removeContainer } from "./containers.js";
import { isNotFound, statusOf } from "./docker-errors.js";
import { ImageMissingError } from "./errors.js";
import { delay } from "./one-shot-exec.js";
import type { SandboxSettings } from "./types.js";

export interface ProvisionContext {
  readonly docker: Docker;
  readonly profile: string;
  readonly slot: string;
  readonly slotDir: string;
  readonly settings: SandboxSettings;
  readonly signal?: AbortSignal | undefined;
}

/**
 * Finds or makes the container of a slot (SPEC §5). With `persistAcrossProcesses`, the
 * labelled containers are probed first: a running one is reused, a paused one unpaused, a
 * stopped one started; one that cannot be started is removed and replaced. A create that
 * loses a race with another process (409 on the deterministic name) probes again.
 * Without it, no probe happens and a fresh, uniquely named container is made.
 */
export async function provisionContainer(context: ProvisionContext): Promise<string> {
  if (!context.settings.persistAcrossProcesses) {
    return createAndStart(context, randomBytes(4).toString("hex"));
  }
  for (let attempt = 0; ; attempt++) {
    context.signal?.throwIfAborted();
    const reused = await reuseExisting(context);
    if (reused !== undefined) return reused;
    try {
      return await createAndStart(context, undefined);
    } catch (error) {
      if (statusOf(error) !== 409 || attempt >= 8) throw error;
      await delay(20 + Math.floor(Math.random() * 80));
    }
  }
}

async function reuseExisting(context: ProvisionContext): Promise<string | undefined> {
  const { docker } = context;
  const found = await findSlotContainers(docker, context.profile, context.slot);
  const running = found.find((c) => c.State === "running");
  if (running !== undefined) return running.Id;
  for (const candidate of found) {
    context.signal?.throwIfAborted();
    const container = docker.getContainer(candidate.Id);
    try {
      if (candidate.State === "paused") await container.unpause();
      else await container.start();
      return candidate.Id;
    } catch (error) {
      if (statusOf(error) === 304) return candidate.Id;
      // A concurrent starter (another process) may have won; only a container that is
      // still not running after the failed start is broken and gets replaced.
      const state = await container.inspect().catch(() => undefined);
      if (state?.State.Running === true) return candidate.Id;
      await removeContainer(docker, candidate.Id, true);
    }
  }
  return undefined;
}

async function createAndStart(
  context: ProvisionContext,
  unique: string | undefined,
): Promise<string> {
  const { docker, settings, slotDir } = context;
  if (settings.persistent) {
    await mkdir(join(slotDir, "workspace"), { recursive: true });
    await mkdir(join(slotDir, "home"), { recursive: true });
  }
  context.signal?.throwIfAborted();
  const name = containerName(context.profile, context.slot, unique);
  let container: Docker.Container;
  try {
    container = await docker.createContainer(
      createOptions({ profile: context.profile, slot: context.slot, slotDir, settings, name }),
    );
  } catch (error) {
    if (isNotFound(error)) throw new ImageMissingError(settings.image, { cause: error });
    throw error;
  }
  try {
    await container.start();
  } catch (error) {
    // 304: another process that lost the name race started it for us.
    if (statusOf(error) === 304) return container.id;
    await removeContainer(docker, container.id, true).catch(() => undefined);
    throw error;
  }
  return container.id;
}
