import { isAbsolute } from "node:path";
import { settledWithin } from "@mediagate/io";
import type Docker from "dockerode";
import type { CallBound } from "./bounded-call.js";
import { Defaults } from "./defaults.js";
import { dockerOf } from "./docker-client.js";
import { guarded } from "./docker-errors.js";
import { type UserMode, userModeOf } from "./exec-user.js";
import { ensureImage } from "./image-ready.js";
import { InboxSaves } from "./inbox.js";
import { installIdOf } from "./install.js";
import type { ContainerOwner } from "./labels.js";
import { maxOpenShellsOf } from "./open-shell-cap.js";
import { provisionContainer } from "./provision.js";
import { sandboxRootsOf } from "./reaper.js";
import type { SandboxOptions } from "./sandbox-options.js";
import { SessionShells } from "./session-shells.js";
import { SessionUsers } from "./session-users.js";
import { deleteSlotDirectory } from "./slot-dirs.js";
import { slotDirectoryFor } from "./slot-key.js";
import { withSlotLock } from "./slot-lock.js";
import type { SandboxSettings } from "./types.js";

/**
 * What the parts of one `Sandbox` share (slot lifecycle, session I/O, housekeeping): its
 * checked options, the Docker client, the bound on each Docker call, the user mode, the
 * session shells, the inbox saves in flight and the work `shutdown()` awaits. One per
 * `Sandbox`, made by its constructor.
 */
export class SandboxContext {
  readonly options: SandboxOptions;
  readonly profile: string;
  /** The install id (see `installIdOf`): the `mediagate.install` label of its containers. */
  readonly install: string;
  readonly docker: Docker;
  /** The injected clock (`SandboxOptions.now`). */
  readonly now: () => number;
  readonly bound: CallBound;
  readonly users: UserMode;
  readonly shells: SessionShells;
  /** The sessions' uids per container (per-session mode), asked of each container once. */
  readonly sessionUsers: SessionUsers;
  readonly inboxSaves = new InboxSaves();
  readonly #pending = new Set<Promise<unknown>>();

  constructor(options: SandboxOptions) {
    if (options.profile.length === 0) {
      throw new TypeError('Sandbox needs a profile name ("default" for the default profile)');
    }
    if (!isAbsolute(options.profileHome) || !isAbsolute(options.rootHome)) {
      throw new TypeError(
        "Sandbox needs absolute profileHome and rootHome paths (resolve them in the config)",
      );
    }
    if (options.dataSlotsRoot !== undefined && !isAbsolute(options.dataSlotsRoot)) {
      throw new TypeError("Sandbox needs an absolute dataSlotsRoot (resolve it in the config)");
    }
    this.docker = dockerOf(options.engine);
    this.options = options;
    this.profile = options.profile;
    this.install = installIdOf(options.rootHome);
    this.now = options.now ?? Date.now;
    this.bound = { timeoutMs: options.operationTimeoutMs ?? Defaults.operationTimeoutMs };
    this.users = userModeOf(options.settings);
    const maxOpenShells = maxOpenShellsOf(options.settings);
    if (!Number.isSafeInteger(maxOpenShells) || maxOpenShells < 1) {
      throw new TypeError(
        `Sandbox needs settings.maxOpenShells to be a positive integer (got ${maxOpenShells}); leave it out to derive it from pidsLimit and memoryBytes (${maxOpenShellsOf({ ...options.settings, maxOpenShells: undefined })})`,
      );
    }
    this.sessionUsers = new SessionUsers(this.docker);
    this.shells = new SessionShells(this.docker, {
      mode: this.users,
      maxOpenShells,
      users: this.sessionUsers,
      now: this.now,
      channel: options.settings.shellChannel,
      onWarning: options.onWarning,
    });
  }

  get settings(): SandboxSettings {
    return this.options.settings;
  }

  get owner(): ContainerOwner {
    return { install: this.install, profile: this.profile, replica: this.options.replica };
  }

  get sandboxRoots(): string[] {
    return sandboxRootsOf(
      this.options.profileHome,
      this.options.rootHome,
      this.options.dataSlotsRoot,
    );
  }

  /** The host directory of a slot ({@link slotDirectoryFor}). */
  slotDirectory(slot: string): string {
    return slotDirectoryFor(slot, this.options);
  }

  /**
   * Runs `fn` holding the slot directory's lock, shared with every Sandbox of this process
   * and with other processes ({@link withSlotLock}).
   */
  locked<T>(slot: string, fn: () => Promise<T>): Promise<T> {
    return withSlotLock(this.slotDirectory(slot), fn, { onWarning: this.options.onWarning });
  }

  /**
   * Makes sure the settings' image is on the engine (`ensureImage`: looked up once, pulled
   * when missing), before anything of a slot is made.
   */
  ensureImage(signal?: AbortSignal): Promise<void> {
    return ensureImage(this.options.engine, this.settings.image, {
      onProgress: this.options.onPullProgress,
      stallTimeoutMs: this.options.pullStallTimeoutMs,
      inspectTimeoutMs: this.bound.timeoutMs,
      signal,
    });
  }

  /**
   * Finds or makes the container of `slot` (`provisionContainer`) with this sandbox's engine,
   * owner, settings and bound; `signal` stops it. Call under the slot's lock.
   */
  provision(
    slot: string,
    signal: AbortSignal | undefined,
    onAbandoned: (idOrName: string) => void,
  ): Promise<string> {
    return provisionContainer({
      docker: this.docker,
      owner: this.owner,
      slot,
      slotDir: this.slotDirectory(slot),
      settings: this.settings,
      bound: { ...this.bound, signal },
      onAbandoned,
      onWarning: (message) => this.options.onWarning?.(message),
    });
  }

  /** Deletes a slot directory where no link can lead out of it; call under its lock. */
  deleteSlotDir(slotDir: string, image: string): Promise<void> {
    return deleteSlotDirectory(slotDir, {
      docker: this.docker,
      image,
      owner: this.owner,
      bound: this.bound,
    });
  }

  /** Keeps `work` until it settles, for `shutdown()` to await ({@link settled}). */
  track<T>(work: Promise<T>): Promise<T> {
    this.#pending.add(work);
    const forget = () => this.#pending.delete(work);
    work.then(forget, forget);
    return work;
  }

  /** Waits, at most `timeoutMs`, for all tracked work to settle. */
  async settled(timeoutMs: number): Promise<void> {
    const all = Promise.allSettled([...this.#pending]);
    await settledWithin(all, timeoutMs);
  }

  /** Runs `fn`, its Docker failures turned into the package's errors (`guarded`). */
  guard<T>(
    operation: string,
    slot: string,
    fn: () => Promise<T>,
    containerId?: string,
  ): Promise<T> {
    return guarded(this.options.engine.endpoint, { operation, slot, containerId }, fn);
  }
}
