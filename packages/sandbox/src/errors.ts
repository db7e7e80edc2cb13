import { MediagateError } from "@mediagate/io";
import { missingImageAdvice } from "./image-advice.js";

/**
 * Error classes of @mediagate/sandbox. Each one carries its context as fields, its class in
 * `name` and its stable `code` (docs/errors.md), so callers branch on `instanceof` or `name`
 * and log the fields.
 */

/** The Docker daemon could not be reached; `endpoint` names the socket or host tried. */
export class DockerUnavailableError extends MediagateError {
  override readonly name = "DockerUnavailableError";
  readonly code = "MG_DOCKER_UNAVAILABLE";
  readonly endpoint: string;

  constructor(endpoint: string, reason: string, options?: { cause?: unknown }) {
    super(`Docker daemon not reachable at ${endpoint}: ${reason}`, options);
    this.endpoint = endpoint;
  }
}

/**
 * The configured image is not on the engine and could not be had: `pullFailure` says why the
 * engine could not pull it (no registry reachable, no such image, a login needed), when a pull
 * was tried. The message names the image and the two ways out.
 */
export class ImageMissingError extends MediagateError {
  override readonly name = "ImageMissingError";
  readonly code = "MG_DOCKER_IMAGE_MISSING";
  readonly image: string;
  readonly pullFailure: string | undefined;

  constructor(image: string, options?: { cause?: unknown; pullFailure?: string | undefined }) {
    const why =
      options?.pullFailure === undefined
        ? "is not present on the engine"
        : `is not on the engine and the engine could not pull it (${options.pullFailure})`;
    super(`Docker image ${image} ${why}: ${missingImageAdvice(image)}`, {
      cause: options?.cause,
    });
    this.image = image;
    this.pullFailure = options?.pullFailure;
  }
}

/** A sandbox operation failed for a reason other than the two above. */
export class SandboxError extends MediagateError {
  override readonly name = "SandboxError";
  readonly code = "MG_SANDBOX_FAILED";
  readonly operation: string;
  readonly slot: string;
  readonly containerId: string | undefined;

  constructor(
    operation: string,
    slot: string,
    message: string,
    options?: { cause?: unknown; containerId?: string | undefined },
  ) {
    super(`${operation} failed for slot ${slot}: ${message}`, { cause: options?.cause });
    this.operation = operation;
    this.slot = slot;
    this.containerId = options?.containerId;
  }
}

/**
 * What went away under a running command (see {@link SandboxLostError}): its container
 * (stopped or removed; a removal under way shows as stopped, so the two are not told apart),
 * or the engine (stopped, killed or not answering).
 */
export type SandboxLossReason = "container-gone" | "engine-unreachable";

/**
 * The sandbox went away while a command ran in it: its container was removed or stopped, or
 * the Docker engine stopped answering (it was stopped or killed). This is not a command
 * result: how far the command got is unknown, and it is not retried. The slot's cached
 * container and the shells open in that container are dropped, so the next call provisions
 * the slot again (reusing or replacing the container).
 */
export class SandboxLostError extends MediagateError {
  override readonly name = "SandboxLostError";
  readonly code = "MG_SANDBOX_LOST";
  readonly operation: string;
  readonly slot: string;
  readonly containerId: string;
  readonly reason: SandboxLossReason;

  constructor(
    operation: string,
    slot: string,
    containerId: string,
    reason: SandboxLossReason,
    options?: { cause?: unknown },
  ) {
    const what =
      reason === "container-gone"
        ? "its container stopped or was removed"
        : "the Docker engine stopped answering";
    super(`${operation} in slot ${slot} was cut off: ${what} while the command ran`, options);
    this.operation = operation;
    this.slot = slot;
    this.containerId = containerId;
    this.reason = reason;
  }
}

/**
 * Thrown by the exec paths (one-shot exec, session shell) when a command's stream ended
 * without an exit code of its own because the container or the engine went away. It knows
 * no slot; `guarded` turns it into the public {@link SandboxLostError} with the slot and
 * operation. Internal: not exported from the package.
 */
export class ContainerLostError extends MediagateError {
  override readonly name = "ContainerLostError";
  readonly code = "MG_SANDBOX_CONTAINER_LOST";
  readonly containerId: string;
  readonly reason: SandboxLossReason;

  constructor(containerId: string, reason: SandboxLossReason, options?: { cause?: unknown }) {
    super(`container ${containerId.slice(0, 12)} went away mid-command (${reason})`, options);
    this.containerId = containerId;
    this.reason = reason;
  }
}

/**
 * A slot directory could not be prepared or deleted safely: its disk image could not be made
 * or mounted, or the delete could not run where no link leads to the host. Nothing is tried
 * in its place (no host-side walk, no directory without its ceiling): the directory stays as
 * it was, and the message says what to do.
 */
export class SlotDirectoryError extends MediagateError {
  override readonly name = "SlotDirectoryError";
  readonly code = "MG_SLOT_DIRECTORY_FAILED";
  /** The slot directory on the host. */
  readonly slotDir: string;
  /** What was being done: `prepare` or `delete`. */
  readonly operation: "prepare" | "delete";

  constructor(
    operation: "prepare" | "delete",
    slotDir: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.operation = operation;
    this.slotDir = slotDir;
  }
}
