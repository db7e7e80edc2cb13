import { DeadlineError, deadline } from "@mediagate/io";
import Docker from "dockerode";
import { boundedCall, CallTimeoutError } from "./bounded-call.js";
import { Defaults } from "./defaults.js";
import { attachClient, dockerOf } from "./docker-client.js";
import { isNotFound, rethrowUnavailable } from "./docker-errors.js";
import { DockerUnavailableError } from "./errors.js";
import { checkRegistry, pullImage } from "./image-pull.js";
import type { ImagePullProgress, RegistryCheck } from "./types.js";

/** Options of {@link connectDocker}. */
export interface DockerConnectOptions {
  /**
   * Endpoint in `DOCKER_HOST` syntax: `unix:///path/docker.sock`, `tcp://host:port`,
   * `http://host:port` or `https://host:port`. Default `unix:///var/run/docker.sock`.
   */
  readonly host?: string | undefined;
}

/**
 * One Docker daemon. Holds the dockerode client privately so no dockerode type appears in
 * this package's exports; never pins an API version (the engine here speaks 1.41).
 */
export class DockerEngine {
  /** The socket or host tried, for messages; never carries credentials. */
  readonly endpoint: string;

  /** @internal Use {@link connectDocker}; an engine built directly has no client. */
  constructor(endpoint: string) {
    this.endpoint = endpoint;
  }

  /** Resolves when the daemon answers; throws {@link DockerUnavailableError} naming the endpoint. */
  async ping(): Promise<void> {
    try {
      await deadline(dockerOf(this).ping(), { timeoutMs: Defaults.pingTimeoutMs, what: "ping" });
    } catch (error) {
      if (error instanceof DeadlineError) {
        throw new DockerUnavailableError(this.endpoint, error.message, { cause: error });
      }
      rethrowUnavailable(this.endpoint, error);
    }
  }

  /**
   * True when the image is present locally (this only looks). A daemon that does not
   * answer within `timeoutMs` (default `Defaults.operationTimeoutMs`) counts as unavailable.
   */
  async hasImage(ref: string, timeoutMs: number = Defaults.operationTimeoutMs): Promise<boolean> {
    const image = dockerOf(this).getImage(ref);
    try {
      // dockerode's image inspect takes no abort signal: the bound only releases the caller.
      await boundedCall("image inspect", { timeoutMs }, () => image.inspect());
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      if (error instanceof CallTimeoutError) {
        throw new DockerUnavailableError(this.endpoint, error.message, { cause: error });
      }
      rethrowUnavailable(this.endpoint, error);
    }
  }

  /**
   * Pulls `ref` through the engine from its registry, reporting progress (the start, each
   * layer's download by quarters, each finished layer, the end) to `onProgress`. Given up when
   * the engine sends nothing for `stallTimeoutMs` (default `Defaults.pullStallTimeoutMs`), which
   * also stops the engine's pull. Fails with `ImageMissingError` (its `pullFailure` the
   * engine's reason) when the engine cannot pull it; the engine pulls anonymously, so a
   * registry that needs a login fails here too.
   */
  async pullImage(
    ref: string,
    options: {
      onProgress?: ((progress: ImagePullProgress) => void) | undefined;
      stallTimeoutMs?: number | undefined;
      signal?: AbortSignal | undefined;
    } = {},
  ): Promise<void> {
    await pullImage(dockerOf(this), this.endpoint, ref, {
      stallTimeoutMs: options.stallTimeoutMs ?? Defaults.pullStallTimeoutMs,
      signal: options.signal,
      onProgress: options.onProgress,
    });
  }

  /**
   * Whether the engine could pull `ref` now: it asks the registry for the image's manifest
   * and downloads nothing. `pullable: false` carries the reason (no registry reachable, no
   * such image, a login needed). Bounded by `timeoutMs` (default
   * `Defaults.registryCheckTimeoutMs`).
   */
  async checkRegistry(ref: string, timeoutMs?: number): Promise<RegistryCheck> {
    return checkRegistry(
      dockerOf(this),
      this.endpoint,
      ref,
      timeoutMs ?? Defaults.registryCheckTimeoutMs,
    );
  }
}

/**
 * Creates a client for the daemon at `host` (DOCKER_HOST syntax). No connection is made
 * until the first call; an unreachable daemon surfaces as {@link DockerUnavailableError}.
 * Every dockerode option that dockerode would otherwise read from the environment is set
 * explicitly, so only the gateway's config decides where Docker is.
 */
export function connectDocker(options: DockerConnectOptions = {}): DockerEngine {
  const host =
    options.host === undefined || options.host === "" ? Defaults.dockerHost : options.host;
  const explicit = {
    socketPath: undefined,
    host: undefined,
    port: undefined,
    protocol: undefined,
    ca: undefined,
    cert: undefined,
    key: undefined,
    timeout: undefined,
    version: undefined,
  };
  if (host.startsWith("unix://")) {
    const socketPath = host.slice("unix://".length) || "/var/run/docker.sock";
    return bind(`unix://${socketPath}`, new Docker({ ...explicit, socketPath }));
  }
  let url: URL;
  try {
    url = new URL(host.includes("://") ? host : `tcp://${host}`);
  } catch (error) {
    throw new DockerUnavailableError(host, "not a valid DOCKER_HOST", { cause: error });
  }
  const scheme = url.protocol.replace(/:$/, "");
  if (scheme !== "tcp" && scheme !== "http" && scheme !== "https") {
    throw new DockerUnavailableError(
      `${scheme}://${url.host}`,
      `unsupported scheme ${scheme} (use unix://, tcp://, http:// or https://)`,
    );
  }
  const protocol = scheme === "https" ? "https" : "http";
  const port = url.port || (protocol === "https" ? "2376" : "2375");
  const client = new Docker({ ...explicit, host: url.hostname, port, protocol });
  return bind(`${scheme}://${url.hostname}:${port}`, client);
}

function bind(endpoint: string, client: Docker): DockerEngine {
  const engine = new DockerEngine(endpoint);
  attachClient(engine, client);
  return engine;
}
