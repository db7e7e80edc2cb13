import { randomBytes } from "node:crypto";
import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { removeContainer } from "./containers.js";
import { Defaults } from "./defaults.js";
import { messageOf, statusOf } from "./docker-errors.js";
import { FrameDecoder } from "./frames.js";
import { currentInstanceId } from "./instance.js";
import { type ContainerOwner, LabelKeys, sanitizeLabelValue } from "./labels.js";

/** What {@link deleteInContainer} needs. */
export interface ContainedDeleteContext {
  readonly docker: Docker;
  /** An image with `rm` (the slot's own sandbox image). */
  readonly image: string;
  /** Install and profile labels of the delete container, so a leftover can be found. */
  readonly owner: ContainerOwner;
  /** Bound of each Docker call. */
  readonly bound: CallBound;
  /** Bound on the `rm` itself. Default `Defaults.slotDeleteTimeoutMs`. */
  readonly timeoutMs?: number | undefined;
}

/** Mount point of the slot directory inside the delete container. */
const SlotMount = "/slot";

/**
 * Deletes the entries `names` (top-level names of `slotDir`) with `rm -rf` run inside a
 * throwaway container that mounts only `slotDir`. Every path the `rm` follows resolves in
 * that container's own filesystem: a directory swapped for a symlink to a host path while
 * the delete runs (renameat2 RENAME_EXCHANGE) leads to the throwaway's root, which is
 * read-only and holds nothing of the host. The container has no network, only the two
 * capabilities `rm -rf` needs as root over any owner's files (DAC_OVERRIDE, FOWNER), and is
 * removed afterwards, whatever happened (also when its create got no answer: the engine may
 * have made it anyway). Throws when the `rm` could not run or did not finish cleanly; nothing
 * is then tried on the host.
 */
export async function deleteInContainer(
  context: ContainedDeleteContext,
  slotDir: string,
  names: readonly string[],
): Promise<void> {
  const { docker, bound } = context;
  const targets = names.map((name) => `${SlotMount}/${name}`);
  const helperName = `mediagate-delete-${randomBytes(6).toString("hex")}`;
  // Removing it is not cancelled with the caller's work: a delete container is never left
  // behind because the caller stopped waiting.
  const removal = { timeoutMs: bound.timeoutMs };
  const create = boundedCall("create container", bound, (abortSignal) =>
    docker.createContainer({
      name: helperName,
      Image: context.image,
      Entrypoint: ["rm", "-rf", "--"],
      Cmd: targets,
      User: "0:0",
      WorkingDir: "/",
      NetworkDisabled: true,
      Labels: {
        [LabelKeys.slotDelete]: "1",
        [LabelKeys.install]: context.owner.install,
        [LabelKeys.owner]: currentInstanceId(),
        [LabelKeys.profile]: sanitizeLabelValue(context.owner.profile),
      },
      HostConfig: {
        Mounts: [{ Type: "bind", Source: slotDir, Target: SlotMount }],
        NetworkMode: "none",
        CapDrop: ["ALL"],
        CapAdd: ["DAC_OVERRIDE", "FOWNER"],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        PidsLimit: 16,
        Memory: 256 * 1024 * 1024,
      },
      abortSignal,
    }),
  );
  const container = await create.catch(async (error: unknown) => {
    // The request was cut, not refused: the engine may still make it under its name.
    if (statusOf(error) === undefined) {
      await removeContainer(docker, helperName, true, removal).catch(() => undefined);
    }
    throw error;
  });
  try {
    await boundedCall(
      "start",
      bound,
      (abortSignal) => container.start({ abortSignal }),
      container.id,
    );
    const waitBound = { ...bound, timeoutMs: context.timeoutMs ?? Defaults.slotDeleteTimeoutMs };
    const ended: unknown = await boundedCall(
      "wait",
      waitBound,
      (abortSignal) => container.wait({ abortSignal }),
      container.id,
    );
    const status = statusCodeOf(ended);
    if (status !== 0) {
      const said = await outputOf(container, bound);
      throw new Error(`rm exited with ${status ?? "no status"}${said ? `: ${said}` : ""}`);
    }
  } finally {
    // A removal that fails still leaves nothing for good: the reaper removes delete
    // containers that exited or never started (`sweepOrphans`), and any whose process is gone.
    await removeContainer(docker, container.id, true, removal).catch(() => undefined);
  }
}

function statusCodeOf(waited: unknown): number | undefined {
  if (typeof waited !== "object" || waited === null || !("StatusCode" in waited)) return undefined;
  return typeof waited.StatusCode === "number" ? waited.StatusCode : undefined;
}

/** The last few hundred characters the delete container printed, for the report. */
async function outputOf(container: Docker.Container, bound: CallBound): Promise<string> {
  try {
    const raw = await boundedCall(
      "logs",
      bound,
      (abortSignal) => container.logs({ stdout: true, stderr: true, tail: 20, abortSignal }),
      container.id,
    );
    let text = "";
    new FrameDecoder((_, payload) => {
      text += payload.toString("utf8");
    }).push(raw);
    return text.trim().slice(-400);
  } catch (error) {
    return `(no output: ${messageOf(error)})`;
  }
}
