import { CallTimeoutError } from "./bounded-call.js";
import {
  ContainerLostError,
  DockerUnavailableError,
  ImageMissingError,
  SandboxError,
  SandboxLostError,
  SlotDirectoryError,
} from "./errors.js";

const ConnectionCodes = new Set([
  "ENOENT",
  "ECONNREFUSED",
  "ECONNRESET",
  "EACCES",
  "EPERM",
  "EPIPE",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ENOTSOCK",
]);

/** HTTP status of a dockerode error, if it came from the daemon. */
export function statusOf(error: unknown): number | undefined {
  if (typeof error !== "object" || error === null || !("statusCode" in error)) return undefined;
  const status = error.statusCode;
  return typeof status === "number" ? status : undefined;
}

/** The `code` of a Node system error (`ECONNREFUSED`…). */
export function codeOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null || !("code" in error)) return undefined;
  const code = error.code;
  return typeof code === "string" ? code : undefined;
}

/** True for transport failures: the daemon was never reached (or hung up). */
export function isConnectionError(error: unknown): boolean {
  const code = codeOf(error);
  return statusOf(error) === undefined && code !== undefined && ConnectionCodes.has(code);
}

export function isNotFound(error: unknown): boolean {
  return statusOf(error) === 404;
}

/** `stop` on a stopped container (304) and anything on a missing one (404) count as done. */
export function isAlreadyDone(error: unknown): boolean {
  const status = statusOf(error);
  return status === 304 || status === 404;
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Rethrows transport failures as {@link DockerUnavailableError} naming `endpoint`. */
export function rethrowUnavailable(endpoint: string, error: unknown): never {
  if (error instanceof DockerUnavailableError) throw error;
  if (isConnectionError(error)) {
    throw new DockerUnavailableError(endpoint, messageOf(error), { cause: error });
  }
  throw error;
}

/**
 * Runs `fn` and maps what it throws to this package's errors: a container or engine that
 * went away mid-command becomes {@link SandboxLostError}, an unreachable daemon
 * {@link DockerUnavailableError}, anything else that is not already ours (or an
 * `AbortError`) a {@link SandboxError} with the operation, slot and container (a Docker call
 * that got no answer in time names the container it was about).
 */
export async function guarded<T>(
  endpoint: string,
  where: { operation: string; slot: string; containerId?: string | undefined },
  fn: () => Promise<T>,
): Promise<T> {
  try {
    return await fn();
  } catch (error) {
    if (error instanceof ContainerLostError) {
      throw new SandboxLostError(where.operation, where.slot, error.containerId, error.reason, {
        cause: error.cause ?? error,
      });
    }
    const ours =
      error instanceof SandboxLostError ||
      error instanceof DockerUnavailableError ||
      error instanceof ImageMissingError ||
      error instanceof SandboxError ||
      error instanceof SlotDirectoryError;
    if (ours || (error instanceof Error && error.name === "AbortError")) throw error;
    if (isConnectionError(error)) {
      throw new DockerUnavailableError(endpoint, messageOf(error), { cause: error });
    }
    const about = error instanceof CallTimeoutError ? error.containerId : undefined;
    throw new SandboxError(where.operation, where.slot, messageOf(error), {
      cause: error,
      containerId: where.containerId ?? about,
    });
  }
}
