import type { Readable } from "node:stream";
import type Docker from "dockerode";
import { boundedCall, CallTimeoutError } from "./bounded-call.js";
import { isConnectionError, messageOf, statusOf } from "./docker-errors.js";
import { DockerUnavailableError, ImageMissingError } from "./errors.js";
import type { ImagePullProgress, RegistryCheck } from "./types.js";

/** One line of the engine's pull stream (`POST /images/create`), as far as it is used here. */
interface PullEvent {
  readonly status?: unknown;
  readonly id?: unknown;
  readonly progressDetail?: { readonly current?: unknown; readonly total?: unknown };
  readonly error?: unknown;
  readonly errorDetail?: { readonly message?: unknown };
}

function isPullEvent(value: unknown): value is PullEvent {
  return typeof value === "object" && value !== null;
}

function numberOr(value: unknown, fallback: number): number {
  return typeof value === "number" && Number.isFinite(value) ? value : fallback;
}

function megabytes(bytes: number): string {
  return `${(bytes / 1_000_000).toFixed(1)} MB`;
}

/** Statuses that finish a layer: downloaded and unpacked, or already on the engine. */
const LayerDone = new Set(["Pull complete", "Already exists"]);

/**
 * Turns the engine's pull stream into a few progress reports: the start (`Pulling from …`),
 * each layer's download at every quarter, each finished layer, and the final `Status: …`. The
 * engine sends many more lines (one per chunk, per extraction step); logging them all would
 * bury everything else. The stream's error line, if any, is kept as {@link error}.
 */
export class PullProgressTracker {
  readonly #image: string;
  /** Layers the engine named (short ids) and whether each is done. */
  readonly #layers = new Map<string, boolean>();
  /** The last quarter (0–4) reported per downloading layer. */
  readonly #quarters = new Map<string, number>();
  /** The error line of the stream, if the engine sent one. */
  error: string | undefined;
  /** The `Status: …` line that ends a successful pull, once seen. */
  finalStatus: string | undefined;

  constructor(image: string) {
    this.#image = image;
  }

  /** Feeds one line of the stream; returns what is worth reporting, if anything. */
  update(event: unknown): ImagePullProgress | undefined {
    if (!isPullEvent(event)) return undefined;
    if (event.error !== undefined || event.errorDetail !== undefined) {
      const detail = event.errorDetail?.message ?? event.error;
      this.error = typeof detail === "string" ? detail : "the engine reported a pull error";
      return undefined;
    }
    const status = typeof event.status === "string" ? event.status : undefined;
    if (status === undefined) return undefined;
    const id = typeof event.id === "string" ? event.id : undefined;
    if (status.startsWith("Pulling from")) return this.#report(status, undefined);
    if (status.startsWith("Status:")) {
      this.finalStatus = status;
      return this.#report(status, undefined);
    }
    if (id === undefined) return undefined;
    if (!this.#layers.has(id)) this.#layers.set(id, false);
    if (LayerDone.has(status)) {
      this.#layers.set(id, true);
      return this.#report(status, id);
    }
    if (status !== "Downloading") return undefined;
    const current = numberOr(event.progressDetail?.current, 0);
    const total = numberOr(event.progressDetail?.total, 0);
    if (total <= 0) return undefined;
    const quarter = Math.min(4, Math.floor((current / total) * 4));
    if (quarter <= (this.#quarters.get(id) ?? -1)) return undefined;
    this.#quarters.set(id, quarter);
    return this.#report(status, id, { current, total });
  }

  #report(
    status: string,
    layer: string | undefined,
    bytes?: { current: number; total: number },
  ): ImagePullProgress {
    const layers = this.#layers.size;
    const layersDone = [...this.#layers.values()].filter(Boolean).length;
    const what =
      bytes === undefined
        ? `${status}${layer === undefined ? "" : ` ${layer}`}`
        : `layer ${layer} ${Math.floor((bytes.current / bytes.total) * 100)}% of ${megabytes(bytes.total)}`;
    const count = layers > 0 ? ` (${layersDone}/${layers} layers)` : "";
    return {
      image: this.#image,
      status,
      layer,
      currentBytes: bytes?.current,
      totalBytes: bytes?.total,
      layersDone,
      layers,
      text: `pulling ${this.#image}: ${what}${count}`,
    };
  }
}

/** The engine's own words in a dockerode error (`json.message`), else the error's message. */
export function engineMessage(error: unknown): string {
  if (typeof error === "object" && error !== null && "json" in error) {
    const json = error.json;
    if (typeof json === "object" && json !== null && "message" in json) {
      const message = json.message;
      if (typeof message === "string" && message !== "") return message;
    }
  }
  return messageOf(error);
}

/** Options of {@link pullImage}. */
export interface PullOptions {
  /**
   * The pull is given up (and its request cut, which stops the engine's pull) when the
   * engine sends nothing for this long: neither its first answer nor a progress line.
   */
  readonly stallTimeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  readonly onProgress?: ((progress: ImagePullProgress) => void) | undefined;
}

/**
 * Pulls `ref` through the engine (dockerode `pull` + `modem.followProgress`), reporting
 * progress as it goes. Fails with {@link ImageMissingError} (carrying the engine's reason and
 * what to do) when the engine cannot pull it: no registry reachable, no such image, a login
 * needed, or a pull that stalled. {@link DockerUnavailableError} when the engine itself does
 * not answer.
 */
export async function pullImage(
  docker: Docker,
  endpoint: string,
  ref: string,
  options: PullOptions,
): Promise<void> {
  options.signal?.throwIfAborted();
  const tracker = new PullProgressTracker(ref);
  const controller = new AbortController();
  let stream: Readable | undefined;
  let timer: NodeJS.Timeout | undefined;
  let stalled = false;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      stalled = true;
      controller.abort(new Error("stalled"));
      stream?.destroy();
    }, options.stallTimeoutMs);
  };
  const onAbort = () => {
    controller.abort(options.signal?.reason);
    stream?.destroy();
  };
  options.signal?.addEventListener("abort", onAbort, { once: true });
  const failed = (reason: string, cause?: unknown) =>
    new ImageMissingError(ref, { cause, pullFailure: reason });
  const stallReason = () =>
    `the pull got no answer or progress from the engine for ${options.stallTimeoutMs} ms`;
  try {
    arm();
    try {
      stream = (await docker.pull(ref, { abortSignal: controller.signal })) as Readable;
    } catch (error) {
      options.signal?.throwIfAborted();
      if (stalled) throw failed(stallReason(), error);
      if (isConnectionError(error)) {
        throw new DockerUnavailableError(endpoint, messageOf(error), { cause: error });
      }
      throw failed(engineMessage(error), error);
    }
    arm();
    const pulled = stream;
    await new Promise<void>((resolve, reject) => {
      docker.modem.followProgress(
        pulled,
        (error: Error | null) => (error === null ? resolve() : reject(error)),
        (event: unknown) => {
          arm();
          const progress = tracker.update(event);
          if (progress !== undefined) options.onProgress?.(progress);
        },
      );
    }).catch((error: unknown) => {
      options.signal?.throwIfAborted();
      if (stalled) throw failed(stallReason(), error);
      throw failed(`the pull stream broke: ${messageOf(error)}`, error);
    });
    options.signal?.throwIfAborted();
    if (stalled) throw failed(stallReason());
    if (tracker.error !== undefined) throw failed(tracker.error);
    if (tracker.finalStatus === undefined) {
      throw failed("the pull stream ended before the engine said the image was complete");
    }
  } finally {
    clearTimeout(timer);
    options.signal?.removeEventListener("abort", onAbort);
  }
}

/**
 * Asks the engine whether its registry has `ref` (`GET /distribution/<ref>/json`: the engine
 * contacts the registry and reads the manifest, nothing is downloaded). Bounded by
 * `timeoutMs`; an engine that does not answer is {@link DockerUnavailableError}.
 */
export async function checkRegistry(
  docker: Docker,
  endpoint: string,
  ref: string,
  timeoutMs: number,
): Promise<RegistryCheck> {
  try {
    // dockerode's distribution call takes no abort signal: the bound only releases the caller.
    await boundedCall("registry check", { timeoutMs }, () => docker.getImage(ref).distribution());
    return { pullable: true };
  } catch (error) {
    if (error instanceof CallTimeoutError) {
      return {
        pullable: false,
        reason: `the engine got no answer from the registry within ${timeoutMs} ms`,
      };
    }
    if (isConnectionError(error)) {
      throw new DockerUnavailableError(endpoint, messageOf(error), { cause: error });
    }
    const status = statusOf(error);
    const said = engineMessage(error);
    if (status === 401 || status === 403 || status === 404) {
      return {
        pullable: false,
        reason: `the registry does not have it or needs a login (${said})`,
      };
    }
    return { pullable: false, reason: said };
  }
}
