import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { destroyContainer, profileFilters, toState } from "./containers.js";
import { Defaults } from "./defaults.js";
import { isNotFound } from "./docker-errors.js";
import { type ContainerOwner, LabelKeys, sanitizeLabelValue } from "./labels.js";
import { parseDockerTime } from "./timestamps.js";
import type { ContainerSummary } from "./types.js";

/**
 * This profile's containers of this install in every state, newest first, as `sandbox ls`
 * shows them.
 */
export async function listProfileContainers(
  docker: Docker,
  owner: ContainerOwner,
  bound: CallBound,
): Promise<ContainerSummary[]> {
  const found = await boundedCall("list containers", bound, (abortSignal) =>
    docker.listContainers({ all: true, filters: { label: profileFilters(owner) }, abortSignal }),
  );
  return summarize(docker, found, bound);
}

/** Turns listed containers into summaries, newest first (finish time of exited ones inspected). */
export async function summarize(
  docker: Docker,
  found: readonly Docker.ContainerInfo[],
  bound: CallBound,
): Promise<ContainerSummary[]> {
  const summaries: ContainerSummary[] = [];
  for (const c of [...found].sort((a, b) => b.Created - a.Created)) {
    const state = toState(c.State);
    let finishedAt: Date | undefined;
    if (state === "exited" || state === "dead") {
      const info = await boundedCall(
        "inspect",
        bound,
        (abortSignal) => docker.getContainer(c.Id).inspect({ abortSignal }),
        c.Id,
      ).catch(() => undefined);
      finishedAt = parseDockerTime(info?.State.FinishedAt);
    }
    summaries.push({
      id: c.Id,
      name: (c.Names[0] ?? "").replace(/^\//, ""),
      slot: c.Labels[LabelKeys.slot] ?? "unknown",
      profile: c.Labels[LabelKeys.profile] ?? "unknown",
      state,
      image: c.Image,
      createdAt: new Date(c.Created * 1000),
      finishedAt,
    });
  }
  return summaries;
}

/**
 * Stops and removes one container by id or name, only if it carries this install's and this
 * profile's labels. Returns its full id, or `undefined` when it is already gone.
 */
export async function removeOwnContainer(
  docker: Docker,
  owner: ContainerOwner,
  idOrName: string,
  bound: CallBound,
): Promise<string | undefined> {
  let info: Docker.ContainerInspectInfo;
  try {
    info = await boundedCall(
      "inspect",
      bound,
      (abortSignal) => docker.getContainer(idOrName).inspect({ abortSignal }),
      idOrName,
    );
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  const labels = info.Config.Labels ?? {};
  if (
    labels[LabelKeys.agent] !== "1" ||
    labels[LabelKeys.install] !== owner.install ||
    labels[LabelKeys.profile] !== sanitizeLabelValue(owner.profile) ||
    (owner.replica !== undefined &&
      labels[LabelKeys.replica] !== sanitizeLabelValue(owner.replica.replica))
  ) {
    throw new Error(
      `container ${idOrName} is not a mediagate container of profile ${owner.profile} of this install${owner.replica === undefined ? "" : ` and replica ${owner.replica.replica}`}`,
    );
  }
  await destroyContainer(docker, info.Id, Defaults.stopGraceSeconds, bound);
  return info.Id;
}
