import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { removeContainer } from "./containers.js";
import { Defaults } from "./defaults.js";
import { statusOf } from "./docker-errors.js";
import { readFrames, StreamType } from "./frames.js";
import { currentInstanceId } from "./instance.js";
import {
  type ContainerOwner,
  LabelKeys,
  replicaFilters,
  replicaLabels,
  sanitizeLabelValue,
} from "./labels.js";

/**
 * The jobs the sandbox runs in a throwaway container, each with the label that marks it (no
 * slot's container: none carries the `agent` label) and the prefix of its name.
 */
export const ThrowawayKinds = {
  /** `rm -rf` of a slot directory's contents (`deleteInContainer`). */
  slotDelete: { label: LabelKeys.slotDelete, namePrefix: "mediagate-delete" },
  /** The kill script beside a container, in its PID namespace (`killFromOutside`). */
  processKill: { label: LabelKeys.processKill, namePrefix: "mediagate-kill" },
} as const;

/** One of {@link ThrowawayKinds}. */
export type ThrowawayKind = keyof typeof ThrowawayKinds;

/** Whether a container's labels mark it as a throwaway container of any kind. */
export function isThrowaway(labels: Readonly<Record<string, string>> | undefined): boolean {
  return Object.values(ThrowawayKinds).some(({ label }) => labels?.[label] === "1");
}

/**
 * Label filters of one install's profile's throwaway containers, one list per kind (the
 * engine ANDs the filters of one list).
 */
export function throwawayFilters(owner: ContainerOwner): string[][] {
  return Object.values(ThrowawayKinds).map(({ label }) => [
    `${label}=1`,
    `${LabelKeys.install}=${owner.install}`,
    `${LabelKeys.profile}=${sanitizeLabelValue(owner.profile)}`,
    ...replicaFilters(owner),
  ]);
}

/** What {@link runThrowaway} needs. */
export interface ThrowawayContext {
  readonly docker: Docker;
  /** Install and profile labels of the container, so a leftover can be found. */
  readonly owner: ContainerOwner;
  /** Bound of each Docker call; its signal cancels the job, never the removal. */
  readonly bound: CallBound;
}

/** One job. */
export interface ThrowawaySpec {
  readonly kind: ThrowawayKind;
  /** An image with what the job runs (the slot's own). */
  readonly image: string;
  readonly entrypoint: readonly string[];
  readonly cmd: readonly string[];
  /** Docker's `User` (`uid:gid`, or a name of the image). */
  readonly user: string;
  /** The only capabilities it gets; every other one is dropped. */
  readonly capAdd: readonly string[];
  readonly memoryBytes: number;
  readonly mounts?: readonly Docker.MountSettings[] | undefined;
  /** `container:<id>` to join that container's PID namespace. */
  readonly pidMode?: string | undefined;
  /** Bound on the job from its start to its exit; it is then killed (removed). */
  readonly runTimeoutMs: number;
  /** Name of that wait in a timeout error, e.g. `kill from outside`. */
  readonly job: string;
}

/** How a job ended: its exit status and the end of what it printed. */
export interface ThrowawayResult {
  readonly exitCode: number | undefined;
  readonly stdout: string;
  readonly stderr: string;
}

/** Characters of each output stream kept (the end of it): enough for a count or an error. */
const KeptOutput = 4096;

/**
 * Runs one job in a throwaway container: made from `spec.image` with no network, a read-only
 * root, `no-new-privileges`, every capability dropped but `spec.capAdd`, the pids ceiling
 * `Defaults.throwawayPidsLimit` and `spec.memoryBytes`; attached before it starts (its output
 * is read from the attach, whatever the engine's log driver), started, waited for. It is
 * removed afterwards, however the job ended, with a bound of its own that the caller's signal
 * does not cancel, and also when its create got no answer (the engine may have made it anyway:
 * it is removed by its name). A removal that fails leaves a container the reaper sweeps
 * (`sweepOrphans`, `sweepGoneOwners`), found by its kind's label. Throws when a Docker call
 * failed or the job outlived `spec.runTimeoutMs`.
 */
export async function runThrowaway(
  context: ThrowawayContext,
  spec: ThrowawaySpec,
): Promise<ThrowawayResult> {
  const { docker, bound } = context;
  const kind = ThrowawayKinds[spec.kind];
  const name = `${kind.namePrefix}-${randomBytes(6).toString("hex")}`;
  const removal = { timeoutMs: bound.timeoutMs };
  const container = await boundedCall("create container", bound, (abortSignal) =>
    docker.createContainer({
      name,
      Image: spec.image,
      Entrypoint: [...spec.entrypoint],
      Cmd: [...spec.cmd],
      User: spec.user,
      WorkingDir: "/",
      NetworkDisabled: true,
      Labels: {
        [kind.label]: "1",
        [LabelKeys.install]: context.owner.install,
        [LabelKeys.owner]: currentInstanceId(),
        [LabelKeys.profile]: sanitizeLabelValue(context.owner.profile),
        ...replicaLabels(context.owner),
      },
      HostConfig: {
        ...(spec.mounts === undefined ? {} : { Mounts: [...spec.mounts] }),
        ...(spec.pidMode === undefined ? {} : { PidMode: spec.pidMode }),
        NetworkMode: "none",
        CapDrop: ["ALL"],
        CapAdd: [...spec.capAdd],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        PidsLimit: Defaults.throwawayPidsLimit,
        Memory: spec.memoryBytes,
      },
      abortSignal,
    }),
  ).catch(async (error: unknown) => {
    // The request was cut, not refused: the engine may still make it under its name.
    if (statusOf(error) === undefined) {
      await removeContainer(docker, name, true, removal).catch(() => undefined);
    }
    throw error;
  });
  try {
    return await attachedRun(container, spec, bound);
  } finally {
    await removeContainer(docker, container.id, true, removal).catch(() => undefined);
  }
}

async function attachedRun(
  container: Docker.Container,
  spec: ThrowawaySpec,
  bound: CallBound,
): Promise<ThrowawayResult> {
  // dockerode types the hijacked attach as a plain ReadWriteStream; it is a socket.
  const stream = (await boundedCall(
    "attach",
    bound,
    (abortSignal) =>
      container.attach({ stream: true, stdout: true, stderr: true, hijack: true, abortSignal }),
    container.id,
  )) as unknown as Duplex;
  const output = { stdout: "", stderr: "" };
  const ended = readFrames(stream, (type, payload) => {
    const key = type === StreamType.stderr ? "stderr" : "stdout";
    output[key] = (output[key] + payload.toString("utf8")).slice(-KeptOutput);
  });
  try {
    await boundedCall(
      "start",
      bound,
      (abortSignal) => container.start({ abortSignal }),
      container.id,
    );
    const waited: unknown = await boundedCall(
      spec.job,
      { ...bound, timeoutMs: spec.runTimeoutMs },
      (abortSignal) => container.wait({ abortSignal }),
      container.id,
    );
    // The last of the output may still be on its way when the exit is reported.
    await boundedCall("attach", bound, () => ended, container.id);
    return { exitCode: statusCodeOf(waited), ...output };
  } finally {
    stream.destroy();
  }
}

function statusCodeOf(waited: unknown): number | undefined {
  if (typeof waited !== "object" || waited === null || !("StatusCode" in waited)) return undefined;
  return typeof waited.StatusCode === "number" ? waited.StatusCode : undefined;
}
