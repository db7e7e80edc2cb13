import { randomBytes } from "node:crypto";
import type { Duplex } from "node:stream";
import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { removeContainer } from "./containers.js";
import { isNotFound } from "./docker-errors.js";
import { FrameDecoder, StreamType } from "./frames.js";
import { currentInstanceId } from "./instance.js";
import { KillScript, type KillSelection, killArguments } from "./kill-script.js";
import { type ContainerOwner, LabelKeys, sanitizeLabelValue } from "./labels.js";

/** What {@link killFromOutside} needs. */
export interface OutsideKillContext {
  readonly docker: Docker;
  /** Install and profile labels of the kill container, so an operator can tell what it is. */
  readonly owner: ContainerOwner;
  /** Bound of each Docker call, and of the kill itself once started. */
  readonly bound: CallBound;
}

/** Most characters of the kill container's output quoted in an error. */
const QuotedOutput = 300;

/**
 * Kills a selection of a container's processes (see {@link KillScript}) from a throwaway
 * container that joins the target's PID namespace (`PidMode: container:<id>`), made from the
 * target's own image. The killer lives in a cgroup of its own, so it runs when the target is
 * at its pids limit: there a `docker exec` may not start (the engine's exec helper needs a
 * thread in the target's cgroup) and a script inside could not fork. It runs as root with
 * only `KILL` (which signals any uid, and reads environments only as far as a root process
 * without `CAP_SYS_PTRACE` may), no network, a read-only root and `no-new-privileges`; the
 * engine removes it when it exits (`AutoRemove`), and it is removed here as well.
 *
 * Returns how many processes were killed; 0 when the target is gone or not running. Throws
 * when the killer could not run to its end, with what it printed.
 */
export async function killFromOutside(
  context: OutsideKillContext,
  containerId: string,
  selection: KillSelection,
): Promise<number> {
  const { docker, bound } = context;
  let target: Docker.ContainerInspectInfo;
  try {
    target = await boundedCall(
      "inspect",
      bound,
      (abortSignal) => docker.getContainer(containerId).inspect({ abortSignal }),
      containerId,
    );
  } catch (error) {
    if (isNotFound(error)) return 0;
    throw error;
  }
  if (!target.State.Running) return 0;
  const killer = await boundedCall("create kill container", bound, (abortSignal) =>
    docker.createContainer({
      name: `mediagate-kill-${randomBytes(6).toString("hex")}`,
      Image: target.Image,
      Entrypoint: ["sh", "-c", KillScript, "mediagate-kill"],
      Cmd: killArguments(selection),
      User: "0:0",
      WorkingDir: "/",
      NetworkDisabled: true,
      Labels: {
        [LabelKeys.processKill]: "1",
        [LabelKeys.install]: context.owner.install,
        [LabelKeys.owner]: currentInstanceId(),
        [LabelKeys.profile]: sanitizeLabelValue(context.owner.profile),
      },
      HostConfig: {
        PidMode: `container:${containerId}`,
        NetworkMode: "none",
        CapDrop: ["ALL"],
        CapAdd: ["KILL"],
        SecurityOpt: ["no-new-privileges"],
        ReadonlyRootfs: true,
        AutoRemove: true,
        PidsLimit: 16,
        Memory: 64 * 1024 * 1024,
      },
      abortSignal,
    }),
  );
  try {
    // dockerode types the hijacked attach as a plain ReadWriteStream; it is a socket.
    const stream = (await boundedCall(
      "attach",
      bound,
      (abortSignal) =>
        killer.attach({ stream: true, stdout: true, stderr: true, hijack: true, abortSignal }),
      killer.id,
    )) as unknown as Duplex;
    const output = { stdout: "", stderr: "" };
    const decoder = new FrameDecoder((type, payload) => {
      if (type === StreamType.stderr) output.stderr += payload.toString("utf8");
      else output.stdout += payload.toString("utf8");
    });
    stream.on("data", (chunk: Buffer) => decoder.push(chunk));
    const ended = new Promise<void>((resolve) => {
      stream.once("end", resolve);
      stream.once("close", resolve);
      stream.on("error", () => resolve());
    });
    await boundedCall("start", bound, (abortSignal) => killer.start({ abortSignal }), killer.id);
    await boundedCall("kill from outside", bound, () => ended, containerId).finally(() =>
      stream.destroy(),
    );
    const answer = output.stdout.trim();
    if (!/^\d+$/.test(answer)) {
      const said = (output.stderr.trim() || answer || "no output").slice(-QuotedOutput);
      throw new Error(
        `the kill container for ${containerId.slice(0, 12)} ended without a count: ${said}`,
      );
    }
    return Number.parseInt(answer, 10);
  } finally {
    await removeContainer(docker, killer.id, true, bound).catch(() => undefined);
  }
}
