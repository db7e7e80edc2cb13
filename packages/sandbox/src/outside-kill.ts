import type Docker from "dockerode";
import { boundedCall } from "./bounded-call.js";
import { Defaults } from "./defaults.js";
import { isNotFound } from "./docker-errors.js";
import { type ExecUser, type UserMode, userSpec } from "./exec-user.js";
import { KillScript, type KillSelection, killArguments, UidKillScript } from "./kill-script.js";
import {
  runThrowaway,
  type ThrowawayContext,
  type ThrowawayResult,
} from "./throwaway-container.js";

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
  const target = await runningTarget(context, containerId);
  if (target === undefined) return 0;
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
    runTimeoutMs: context.bound.timeoutMs,
    job: "kill from outside",
  });
  return killedCount(ended, containerId);
}

/**
 * Kills every process of a session's uid in a container at once ({@link UidKillScript}): a
 * throwaway container as in {@link killFromOutside}, running as `user` itself with no
 * capability. It starts when the uid is at its process limit, where a `docker exec` as that
 * uid cannot: RLIMIT_NPROC, which counts the uid's processes on the whole host, is the
 * session container's `sessionProcessLimit` only inside that container; the kill container
 * has the engine's default (dockerd's own, 96369 on the test machine), and setting a higher
 * one is refused by runc. Returns how many processes the uid had; 0 when the target is gone
 * or not running.
 */
export async function killUidFromOutside(
  context: OutsideKillContext,
  containerId: string,
  user: ExecUser,
): Promise<number> {
  const target = await runningTarget(context, containerId);
  if (target === undefined) return 0;
  const ended = await runThrowaway(context, {
    kind: "processKill",
    image: target.Image,
    entrypoint: ["sh", "-c", UidKillScript, "mediagate-kill"],
    cmd: [String(user.uid)],
    user: userSpec(user),
    capAdd: [],
    memoryBytes: Defaults.outsideKillMemoryBytes,
    pidMode: `container:${containerId}`,
    runTimeoutMs: context.bound.timeoutMs,
    job: "kill from outside",
  });
  return killedCount(ended, containerId);
}

/** The container's inspect when it is running; undefined when it is gone or stopped. */
async function runningTarget(
  context: OutsideKillContext,
  containerId: string,
): Promise<Docker.ContainerInspectInfo | undefined> {
  const { docker, bound } = context;
  try {
    const target = await boundedCall(
      "inspect",
      bound,
      (abortSignal) => docker.getContainer(containerId).inspect({ abortSignal }),
      containerId,
    );
    return target.State.Running ? target : undefined;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/** The count a kill container printed; throws with what it printed when there is none. */
function killedCount(ended: ThrowawayResult, containerId: string): number {
  const answer = ended.stdout.trim();
  if (!/^\d+$/.test(answer)) {
    const said = (ended.stderr.trim() || answer || "no output").slice(-QuotedOutput);
    throw new Error(
      `the kill container for ${containerId.slice(0, 12)} ended without a count: ${said}`,
    );
  }
  return Number.parseInt(answer, 10);
}
