import type { Schedule } from "@mediagate/io";
import type { DockerEngine } from "./engine.js";
import type { ReplicaLabels } from "./labels.js";
import type { ImagePullProgress, SandboxSettings } from "./types.js";

/** Options of `Sandbox` (docs/architecture.md). */
export interface SandboxOptions {
  readonly engine: DockerEngine;
  /** Profile name (`"default"` for the default profile); labels and reaping use it. */
  readonly profile: string;
  /** The profile's home; slot dirs live in `<profileHome>/sandboxes/docker/`. */
  readonly profileHome: string;
  /**
   * The root home; `shared:` slot dirs live in `<rootHome>/sandboxes/docker/`. Its real path
   * names the install (`mediagate.install` label): only containers of the same install are
   * reused, listed, removed or reaped.
   */
  readonly rootHome: string;
  /**
   * An absolute directory, laid out like a home (`sandboxes/docker/`), where the slots whose
   * directories are data (`default`, `profile:…`, `shared:…`) live instead of the homes:
   * storage every replica of a cluster sees (`cluster.slotsDir`, docs/cluster.md). Default:
   * the homes.
   */
  readonly dataSlotsRoot?: string | undefined;
  /**
   * The cluster and replica of a gateway that is one of several replicas (docs/cluster.md): its
   * containers carry them as labels, and it finds, lists, removes and reaps only its own.
   */
  readonly replica?: ReplicaLabels | undefined;
  readonly settings: SandboxSettings;
  /** Clock (ms since epoch) used for the reaper's age check. Default `Date.now`. */
  readonly now?: () => number;
  /** Receives problems that are handled rather than thrown (a failed automatic reap). */
  readonly onWarning?: (message: string, cause?: unknown) => void;
  /**
   * Non-persistent settings only: how long a slot may go without an acquire, exec or run
   * before its container is cleaned up (removed with its dirs). Default
   * `settings.lifetimeSeconds × 1000`; tests make it short.
   */
  readonly idleCleanupMs?: number;
  /**
   * Receives the progress of pulling the profile's image when the engine does not have it
   * (the first acquire of the process looks; see `DockerEngine#pullImage`).
   */
  readonly onPullProgress?: (progress: ImagePullProgress) => void;
  /**
   * A pull is given up when the engine sends nothing for this long. Default
   * `Defaults.pullStallTimeoutMs`.
   */
  readonly pullStallTimeoutMs?: number;
  /**
   * Makes the idle-cleanup timers: runs `run` after `delayMs` and returns its cancel. Default
   * real (unref'd) timers; tests pass one they fire by hand, so nothing waits on the clock.
   */
  readonly schedule?: Schedule;
  /** Bound on finding or making a slot's container. Default `Defaults.provisionTimeoutMs`. */
  readonly provisionTimeoutMs?: number;
  /**
   * Bound on each Docker lifecycle call (create, start, inspect, list, stop beyond its
   * grace period, remove, container reads until the file is named), enforced inside the slot lock: a call the
   * daemon never answers is aborted and fails with a {@link SandboxError}, so later calls
   * on the slot are not stuck behind it. Default `Defaults.operationTimeoutMs`.
   */
  readonly operationTimeoutMs?: number;
}
