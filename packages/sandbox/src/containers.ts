import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { isAlreadyDone, statusOf } from "./docker-errors.js";
import {
  type ContainerOwner,
  LabelKeys,
  replicaFilters,
  sanitizeLabelValue,
  slotHash,
} from "./labels.js";
import { slotTraits } from "./slot-key.js";
import type { ContainerState } from "./types.js";

const States: readonly ContainerState[] = [
  "created",
  "running",
  "paused",
  "restarting",
  "removing",
  "exited",
  "dead",
];

export function toState(value: unknown): ContainerState {
  return States.find((state) => state === value) ?? "missing";
}

/**
 * Label filters of the containers of one install (`agent=1`, `install=<id>`), and of its
 * replica in a cluster.
 */
export function installFilters(owner: Pick<ContainerOwner, "install" | "replica">): string[] {
  return [
    `${LabelKeys.agent}=1`,
    `${LabelKeys.install}=${owner.install}`,
    ...replicaFilters(owner),
  ];
}

/** Label filters of one profile's containers of one install. */
export function profileFilters(owner: ContainerOwner): string[] {
  return [...installFilters(owner), `${LabelKeys.profile}=${sanitizeLabelValue(owner.profile)}`];
}

/**
 * Containers of one slot of the owner's install, any state, newest first. Slots that span
 * profiles (`shared:`) are looked up across the install's profiles (every profile with the
 * same shared key uses one container); never across installs.
 */
export async function findSlotContainers(
  docker: Docker,
  owner: ContainerOwner,
  slot: string,
  bound: CallBound,
): Promise<Docker.ContainerInfo[]> {
  const labels = [
    ...(slotTraits(slot).spansProfiles ? installFilters(owner) : profileFilters(owner)),
    `${LabelKeys.slot}=${sanitizeLabelValue(slot)}`,
    `${LabelKeys.slotHash}=${slotHash(slot)}`,
  ];
  const found = await boundedCall("list containers", bound, (abortSignal) =>
    docker.listContainers({ all: true, filters: { label: labels }, abortSignal }),
  );
  return found.sort((a, b) => b.Created - a.Created);
}

/**
 * `docker stop` with a grace period; 304 (already stopped) and 404 (gone) count as done.
 * The call may take the grace period on top of `bound.timeoutMs`.
 */
export async function stopContainer(
  docker: Docker,
  id: string,
  graceSeconds: number,
  bound: CallBound,
): Promise<void> {
  const stopBound = { ...bound, timeoutMs: bound.timeoutMs + graceSeconds * 1000 };
  try {
    await boundedCall(
      "stop",
      stopBound,
      (abortSignal) => docker.getContainer(id).stop({ t: graceSeconds, abortSignal }),
      id,
    );
  } catch (error) {
    if (!isAlreadyDone(error)) throw error;
  }
}

/** Removes a container (and its anonymous volumes); 404 and "already in progress" are done. */
export async function removeContainer(
  docker: Docker,
  id: string,
  force: boolean,
  bound: CallBound,
): Promise<void> {
  try {
    await boundedCall(
      "remove",
      bound,
      (abortSignal) => docker.getContainer(id).remove({ force, v: true, abortSignal }),
      id,
    );
  } catch (error) {
    if (isAlreadyDone(error)) return;
    if (statusOf(error) === 409 && /already in progress/i.test(String(error))) return;
    throw error;
  }
}

/** Stop (with grace) then remove: the teardown every cleanup path uses. */
export async function destroyContainer(
  docker: Docker,
  id: string,
  graceSeconds: number,
  bound: CallBound,
): Promise<void> {
  await stopContainer(docker, id, graceSeconds, bound);
  await removeContainer(docker, id, true, bound);
}
