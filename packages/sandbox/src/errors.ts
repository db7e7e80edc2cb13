/**
 * Error classes of @mediagate/sandbox. Each one carries its context as fields and its code
 * in `name`, so callers branch on `instanceof` or `name` and log the fields.
 */

/** The Docker daemon could not be reached; `endpoint` names the socket or host tried. */
export class DockerUnavailableError extends Error {
  override readonly name = "DockerUnavailableError";
  readonly endpoint: string;

  constructor(endpoint: string, reason: string, options?: { cause?: unknown }) {
    super(`Docker daemon not reachable at ${endpoint}: ${reason}`, options);
    this.endpoint = endpoint;
  }
}

/** The configured image is not present on the engine (nothing is ever pulled). */
export class ImageMissingError extends Error {
  override readonly name = "ImageMissingError";
  readonly image: string;

  constructor(image: string, options?: { cause?: unknown }) {
    super(
      `Docker image ${image} is not present on the engine (it is never pulled; build or load it)`,
      options,
    );
    this.image = image;
  }
}

/** A sandbox operation failed for a reason other than the two above. */
export class SandboxError extends Error {
  override readonly name = "SandboxError";
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
 * A slot directory could not be prepared or deleted safely: its disk image could not be made
 * or mounted, or the delete could not run where no link leads to the host. Nothing is tried
 * in its place (no host-side walk, no directory without its ceiling): the directory stays as
 * it was, and the message says what to do.
 */
export class SlotDirectoryError extends Error {
  override readonly name = "SlotDirectoryError";
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
