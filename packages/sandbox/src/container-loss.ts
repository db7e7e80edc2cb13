import type Docker from "dockerode";
import { boundedCall, CallTimeoutError } from "./bounded-call.js";
import { Defaults } from "./defaults.js";
import { isConnectionError, isNotFound } from "./docker-errors.js";
import { ContainerLostError, type SandboxLossReason } from "./errors.js";

type Loss = { reason: SandboxLossReason; cause?: unknown } | undefined;

/** A refused, reset or unanswered call: the engine is not there to ask. */
function engineGone(error: unknown): boolean {
  return isConnectionError(error) || error instanceof CallTimeoutError;
}

/**
 * Asks the engine, after a command's stream ended without a clean exit code, whether its
 * container went away. `undefined`: the container is still running, so the command's own
 * process died and its result stands. The stream of a stopping container can end a moment
 * before the engine marks it stopped, so a container that still shows running is given
 * `Defaults.containerLossGraceMs` to stop before the result is believed. An engine that
 * refuses the connection or does not answer within `operationTimeoutMs` is unreachable;
 * any other answer (a 500) is rethrown.
 */
export async function lossOf(docker: Docker, containerId: string): Promise<Loss> {
  const bound = { timeoutMs: Defaults.operationTimeoutMs };
  const container = docker.getContainer(containerId);
  try {
    const info = await boundedCall(
      "inspect",
      bound,
      (abortSignal) => container.inspect({ abortSignal }),
      containerId,
    );
    if (info.State.Status !== "running") return { reason: "container-gone" };
  } catch (error) {
    if (isNotFound(error)) return { reason: "container-gone" };
    if (engineGone(error)) return { reason: "engine-unreachable", cause: error };
    throw error;
  }
  try {
    await boundedCall(
      "wait",
      { timeoutMs: Defaults.containerLossGraceMs },
      (abortSignal) => container.wait({ condition: "not-running", abortSignal }),
      containerId,
    );
    return { reason: "container-gone" };
  } catch (error) {
    if (error instanceof CallTimeoutError) return stillRunning(container);
    if (isNotFound(error)) return { reason: "container-gone" };
    if (isConnectionError(error)) return { reason: "engine-unreachable", cause: error };
    throw error;
  }
}

/**
 * The grace passed and the container never showed stopped: ask once more before believing the
 * result. A loaded engine can take longer than the grace to answer the wait at all while it
 * is removing the container, and then shows it `removing`, stopped or gone.
 */
async function stillRunning(container: Docker.Container): Promise<Loss> {
  try {
    const info = await boundedCall(
      "inspect",
      { timeoutMs: Defaults.operationTimeoutMs },
      (abortSignal) => container.inspect({ abortSignal }),
      container.id,
    );
    return info.State.Status === "running" ? undefined : { reason: "container-gone" };
  } catch (error) {
    if (isNotFound(error)) return { reason: "container-gone" };
    if (engineGone(error)) return { reason: "engine-unreachable", cause: error };
    throw error;
  }
}

/** Throws {@link ContainerLostError} when the container of a cut-off command went away. */
export async function throwIfLost(docker: Docker, containerId: string): Promise<void> {
  const loss = await lossOf(docker, containerId);
  if (loss !== undefined) {
    throw new ContainerLostError(containerId, loss.reason, { cause: loss.cause });
  }
}
