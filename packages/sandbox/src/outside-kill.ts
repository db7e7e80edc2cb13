import type Docker from "dockerode";
import { boundedCall } from "./bounded-call.js";
import { Defaults } from "./defaults.js";
import { isNotFound } from "./docker-errors.js";
import { type UserMode, userSpec } from "./exec-user.js";
import { KillScript, type KillSelection, killArguments } from "./kill-script.js";
import { runThrowaway, type ThrowawayContext } from "./throwaway-container.js";

/** What {@link killFromOutside} needs. */
export type OutsideKillContext = ThrowawayContext;

/** Most characters of the kill container's output quoted in an error. */
const QuotedOutput = 300;

/**
 * Kills a selection of a container's processes (see {@link KillScript}) from a throwaway
 * container ({@link runThrowaway}, `mediagate-kill-*`) that joins the target's PID namespace
 * (`PidMode: container:<id>`), made from the target's own image. The killer lives in a cgroup
 * of its own, so it runs when the target is at its pids limit: there a `docker exec` may not
 * start (the engine's exec helper needs a thread in the target's cgroup) and a script inside
 * could not fork. It runs as `mode.housekeeper`, with the least that kills the selection:
 * in per-session mode as root with only `KILL` (which signals any uid; the sessions are
 * selected by their uids, since a root process without `CAP_SYS_PTRACE` cannot read another
 * uid's environment); in root mode (no housekeeper) as the target's own user (`Config.User`)
 * with no capability, since every session runs as that user and is selected by its
 * environment marker, which only that user (or `CAP_SYS_PTRACE`) may read.
 *
 * Returns how many processes were killed; 0 when the target is gone or not running. Throws
 * when the killer could not run to its end, with what it printed.
 */
export async function killFromOutside(
  context: OutsideKillContext,
  containerId: string,
  selection: KillSelection,
  mode: Pick<UserMode, "housekeeper">,
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
  const runner = mode.housekeeper;
  const ended = await runThrowaway(context, {
    kind: "processKill",
    image: target.Image,
    entrypoint: ["sh", "-c", KillScript, "mediagate-kill"],
    cmd: killArguments(selection),
    user: runner === undefined ? target.Config.User || "0:0" : userSpec(runner),
    capAdd: runner === undefined ? [] : ["KILL"],
    memoryBytes: Defaults.outsideKillMemoryBytes,
    pidMode: `container:${containerId}`,
    runTimeoutMs: bound.timeoutMs,
    job: "kill from outside",
  });
  const answer = ended.stdout.trim();
  if (!/^\d+$/.test(answer)) {
    const said = (ended.stderr.trim() || answer || "no output").slice(-QuotedOutput);
    throw new Error(
      `the kill container for ${containerId.slice(0, 12)} ended without a count: ${said}`,
    );
  }
  return Number.parseInt(answer, 10);
}
