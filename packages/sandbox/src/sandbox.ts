import { isAbsolute } from "node:path";
import type Docker from "dockerode";
import { readContainerFile } from "./archive.js";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { slotDirectoryOf } from "./container-spec.js";
import { destroyContainer, findSlotContainers, toState } from "./containers.js";
import { Defaults } from "./defaults.js";
import { dockerOf } from "./docker-client.js";
import { guarded, isNotFound, withTimeout } from "./docker-errors.js";
import type { DockerEngine } from "./engine.js";
import { SandboxError, type SlotDirectoryError } from "./errors.js";
import { IdleSlots } from "./idle-slots.js";
import { listProfileContainers, removeOwnContainer } from "./inventory.js";
import { sanitizeLabelValue } from "./labels.js";
import { execOnce } from "./one-shot-exec.js";
import { provisionContainer } from "./provision.js";
import { sandboxRootsOf, sweepOrphans } from "./reaper.js";
import { isGone, SessionShells } from "./session-shells.js";
import { deleteSlotDirectory } from "./slot-dirs.js";
import { withSlotLock } from "./slot-lock.js";
import type {
  ContainerFile,
  ContainerLink,
  ContainerState,
  ContainerSummary,
  ExecOptions,
  ExecResult,
  ReapResult,
  SandboxSettings,
} from "./types.js";

/** Options of {@link Sandbox}. */
export interface SandboxOptions {
  readonly engine: DockerEngine;
  /** Profile name (`"default"` for the default profile); labels and reaping use it. */
  readonly profile: string;
  /** The profile's home; slot dirs live in `<profileHome>/sandboxes/docker/`. */
  readonly profileHome: string;
  /** The root home; `shared:` slot dirs live in `<rootHome>/sandboxes/docker/`. */
  readonly rootHome: string;
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
  /** Bound on finding or making a slot's container. Default `Defaults.provisionTimeoutMs`. */
  readonly provisionTimeoutMs?: number;
  /**
   * Bound on each Docker lifecycle call (create, start, inspect, list, stop beyond its
   * grace period, remove, archive requests), enforced inside the slot lock: a call the
   * daemon never answers is aborted and fails with a {@link SandboxError}, so later calls
   * on the slot are not stuck behind it. Default `Defaults.operationTimeoutMs`.
   */
  readonly operationTimeoutMs?: number;
}

/** Profiles reaped by this process (`endpoint|profile`): the automatic reap runs once. */
const reapedThisProcess = new Set<string>();

/**
 * The Docker sandbox of one profile (SPEC §4–5): one container per slot, reused across
 * processes, hardened; one-shot exec and a persistent shell per chat session; cleanup
 * bounded by timeouts and awaited on shutdown; the orphan reaper.
 */
export class Sandbox {
  readonly profile: string;
  readonly #options: SandboxOptions;
  readonly #docker: Docker;
  readonly #now: () => number;
  readonly #bound: CallBound;
  readonly #handles = new Map<string, string>();
  readonly #shells: SessionShells;
  readonly #pending = new Set<Promise<unknown>>();
  /** Idle cleanup of non-persistent slots; `undefined` for persistent settings. */
  readonly #idle: IdleSlots | undefined;

  constructor(options: SandboxOptions) {
    if (options.profile.length === 0) {
      throw new TypeError('Sandbox needs a profile name ("default" for the default profile)');
    }
    if (!isAbsolute(options.profileHome) || !isAbsolute(options.rootHome)) {
      throw new TypeError(
        "Sandbox needs absolute profileHome and rootHome paths (resolve them in the config)",
      );
    }
    this.#docker = dockerOf(options.engine);
    this.#options = options;
    this.profile = options.profile;
    this.#now = options.now ?? Date.now;
    this.#bound = { timeoutMs: options.operationTimeoutMs ?? Defaults.operationTimeoutMs };
    this.#shells = new SessionShells(this.#docker, options.onWarning);
    if (!options.settings.persistent) {
      const idleMs = options.idleCleanupMs ?? options.settings.lifetimeSeconds * 1000;
      this.#idle = new IdleSlots(idleMs, (slot) => {
        this.#cleanup(slot, {}, true).catch((error: unknown) => {
          options.onWarning?.(`idle cleanup of ${slot} failed`, error);
        });
      });
    }
  }

  get #settings(): SandboxSettings {
    return this.#options.settings;
  }

  /** The host directory of a slot: `<home>/sandboxes/docker/<sanitizeForPath(slot)>`. */
  slotDirectory(slot: string): string {
    return slotDirectoryOf(slot, this.#options);
  }

  /**
   * The slot's container, created or reused under the slot directory's lock (one for the
   * whole process, whichever profile asks, and a lock file other processes honour), so
   * concurrent callers get one container and a slot is never provisioned while it is being
   * deleted. The slot directory is made ready first: 0700, its disk ceiling mounted
   * (`diskLimitBytes`), `workspace/` and `home/` for the sandbox group. The first call of the process runs the orphan reaper (unless
   * disabled). A warm call returns the cached id without asking Docker (a container that
   * vanished since is noticed by the next exec, which acquires again). Each Docker call
   * is bounded by `operationTimeoutMs` and the whole by `provisionTimeoutMs`; a container
   * that is still being made then (or that a cut-off create may still make) is removed as
   * soon as the daemon answers (unless an acquire adopted it meanwhile), and `shutdown()`
   * awaits that removal. With non-persistent settings every acquire, exec and run restarts
   * the slot's idle timer: a slot unused for `lifetimeSeconds` (or `idleCleanupMs`) is
   * cleaned up, its container and dirs removed; never while a call runs.
   */
  async acquire(slot: string, signal?: AbortSignal): Promise<{ containerId: string }> {
    const acquired = await this.#acquire(slot, signal);
    if (this.#handles.has(slot)) this.#idle?.touch(slot);
    return acquired;
  }

  async #acquire(slot: string, signal?: AbortSignal): Promise<{ containerId: string }> {
    const cached = this.#handles.get(slot);
    if (cached !== undefined) return { containerId: cached };
    // Before the lock: the reaper takes the locks of the slot directories it deletes.
    await this.#reapOnce();
    return this.#locked(slot, async () => {
      const held = this.#handles.get(slot);
      if (held !== undefined) return { containerId: held };
      const provisioning = provisionContainer({
        docker: this.#docker,
        profile: this.profile,
        slot,
        slotDir: this.slotDirectory(slot),
        settings: this.#settings,
        bound: { ...this.#bound, signal },
        onAbandoned: (idOrName) => this.#discardLate(slot, Promise.resolve(idOrName)),
        onWarning: (message) => this.#options.onWarning?.(message),
      });
      const timeoutMs = this.#options.provisionTimeoutMs ?? Defaults.provisionTimeoutMs;
      let containerId: string;
      try {
        containerId = await this.#guard("acquire", slot, () =>
          withTimeout(provisioning, timeoutMs, `acquiring ${slot}`),
        );
      } catch (error) {
        this.#discardLate(slot, provisioning);
        throw error;
      }
      this.#handles.set(slot, containerId);
      return { containerId };
    });
  }

  /**
   * One-shot exec in the slot's container: a string runs under `sh -c`, an array as argv.
   * Timeout/abort kill every process the exec started. Default timeout 120 s, output cap
   * 1 MiB per stream.
   */
  async exec(
    slot: string,
    command: string | string[],
    opts: ExecOptions = {},
  ): Promise<ExecResult> {
    const argv = typeof command === "string" ? ["sh", "-c", command] : command;
    return this.#withContainer("exec", slot, (id) =>
      execOnce(this.#docker, id, argv, { ...opts, killOnStop: true }),
    );
  }

  /**
   * Runs `command` in the session's persistent shell in the slot's container: cwd and
   * exported env persist between this session's calls and never leak to another session.
   * Calls of one session run one at a time. `opts.cwd` changes directory first (and
   * persists like a `cd`); `opts.env` applies to this call only. When the shell cannot be
   * opened the call runs as a one-shot exec with the same state (the shell is retried next
   * call). The timeout counts from when the command starts, not while queued.
   */
  async run(
    slot: string,
    sessionKey: string,
    command: string,
    opts: ExecOptions = {},
  ): Promise<ExecResult> {
    return this.#shells.queue(slot, sessionKey, () =>
      this.#withContainer("run", slot, (containerId) =>
        this.#shells.run(slot, sessionKey, containerId, command, opts),
      ),
    );
  }

  /**
   * Kills every process the session started (background ones too) in every container this
   * sandbox holds, including its shell; the session's cwd/env survive for its next call.
   * Returns how many processes were killed.
   */
  async killSession(sessionKey: string): Promise<number> {
    return this.#guard("killSession", "*", () =>
      this.#shells.kill(sessionKey, this.#handles.values()),
    );
  }

  /** The slot's container and its state; `undefined` when the slot has none. */
  async status(slot: string): Promise<{ containerId: string; state: ContainerState } | undefined> {
    return this.#guard("status", slot, async () => {
      let id = this.#handles.get(slot);
      if (id === undefined) {
        const found = await findSlotContainers(this.#docker, this.profile, slot, this.#bound);
        id = (found.find((c) => c.State === "running") ?? found[0])?.Id;
      }
      if (id === undefined) return undefined;
      const container = this.#docker.getContainer(id);
      try {
        const info = await boundedCall(
          "inspect",
          this.#bound,
          (abortSignal) => container.inspect({ abortSignal }),
          id,
        );
        return { containerId: id, state: toState(info.State.Status) };
      } catch (error) {
        if (isNotFound(error)) return { containerId: id, state: "missing" as const };
        throw error;
      }
    });
  }

  /**
   * Ends a slot's use (SPEC §5). `force`: stop (10 s grace) and remove the container;
   * dirs are deleted only with `deleteDirs: true` (what `/reset` asks for). Persistent mode
   * without force: the container keeps running; only this process's handle and shells
   * are dropped. Non-persistent: stop and remove, then delete the slot dirs unless
   * `deleteDirs: false`. Each Docker call is bounded inside the slot lock
   * (`operationTimeoutMs`, plus the grace period for stop), the whole by
   * `Defaults.cleanupTimeoutMs`; `shutdown()` awaits cleanups still running.
   * Deleting the dirs never walks a host path: the slot's disk image is unmounted and
   * unlinked, and anything else is removed by `rm` in a throwaway container that mounts only
   * the slot directory. When that cannot run the dirs stay and a {@link SlotDirectoryError}
   * says why.
   */
  async cleanup(slot: string, opts: { force?: boolean; deleteDirs?: boolean } = {}): Promise<void> {
    await this.#cleanup(slot, opts, false);
  }

  /** `idleOnly`: the idle timer's cleanup, skipped when a call started on the slot meanwhile. */
  async #cleanup(
    slot: string,
    opts: { force?: boolean; deleteDirs?: boolean },
    idleOnly: boolean,
  ): Promise<void> {
    const force = opts.force === true;
    const work = this.#locked(slot, async () => {
      if (idleOnly && this.#idle?.isBusy(slot) === true) return;
      const id = this.#dropSlot(slot);
      if (!force && this.#settings.persistent) return;
      const ids = new Set(id === undefined ? [] : [id]);
      if (this.#settings.persistAcrossProcesses || id === undefined) {
        const found = await findSlotContainers(this.#docker, this.profile, slot, this.#bound);
        for (const c of found) ids.add(c.Id);
      }
      for (const containerId of ids) {
        await destroyContainer(this.#docker, containerId, Defaults.stopGraceSeconds, this.#bound);
      }
      const deleteDirs = force ? opts.deleteDirs === true : opts.deleteDirs !== false;
      if (deleteDirs) await this.#deleteSlotDir(this.slotDirectory(slot), this.#settings.image);
    });
    await this.#guard("cleanup", slot, () =>
      withTimeout(this.#track(work), Defaults.cleanupTimeoutMs, `cleanup of ${slot}`),
    );
  }

  /**
   * Reads a regular file from the slot's live container through the archive API, without
   * starting one. Only a canonical path is read: when any component of `containerPath`
   * is a symlink (a parent directory too, which the archive API would silently follow) or
   * the path is not normalised (`.`, `..`, `//`), the answer is `{ linkTarget }` with the
   * canonical path and nothing is read; the caller checks that path and asks again.
   * `undefined` when the slot has no running container or the path is missing or not a
   * regular file; over `maxBytes`, the real size comes back and the stream fails on read.
   */
  async readFile(
    slot: string,
    containerPath: string,
    maxBytes: number,
  ): Promise<ContainerFile | ContainerLink | undefined> {
    const current = await this.status(slot);
    if (current === undefined || current.state !== "running") return undefined;
    return this.#guard("readFile", slot, () =>
      readContainerFile(this.#docker, current.containerId, containerPath, maxBytes, this.#bound),
    );
  }

  /** This profile's containers (all states), newest first. */
  async list(): Promise<ContainerSummary[]> {
    return this.#guard("list", "*", () =>
      listProfileContainers(this.#docker, this.profile, this.#bound),
    );
  }

  /**
   * Stops and removes a container of this profile, named by slot key or by container id
   * or name. Slot dirs are kept. A container of another profile (or not ours) is refused;
   * one that is already gone counts as removed.
   */
  async remove(containerIdOrSlot: string): Promise<void> {
    const bySlot = await this.#guard("remove", containerIdOrSlot, () =>
      findSlotContainers(this.#docker, this.profile, containerIdOrSlot, this.#bound),
    );
    if (bySlot.length > 0 || this.#handles.has(containerIdOrSlot)) {
      await this.cleanup(containerIdOrSlot, { force: true, deleteDirs: false });
      return;
    }
    const removed = await this.#guard("remove", containerIdOrSlot, () =>
      removeOwnContainer(this.#docker, this.profile, containerIdOrSlot, this.#bound),
    );
    for (const [slot, id] of this.#handles) if (id === removed) this.#dropSlot(slot);
  }

  /**
   * Removes this profile's exited containers older than `2 × max(60, lifetimeSeconds)`,
   * with the slot dirs of session and task-id slots; the dirs of `default`,
   * `profile:<name>` and `shared:<key>` slots are persistent data and kept. Runs whenever
   * called (the CLI's `sandbox reap`); the automatic once-per-process run at first use
   * honours `orphanReaper: false`.
   */
  async reapOrphans(opts: { now?: Date } = {}): Promise<ReapResult> {
    return this.#guard("reapOrphans", "*", () =>
      sweepOrphans({
        docker: this.#docker,
        profile: this.profile,
        lifetimeSeconds: this.#settings.lifetimeSeconds,
        now: opts.now ?? new Date(this.#now()),
        sandboxRoots: sandboxRootsOf(this.#options.profileHome, this.#options.rootHome),
        timeoutMs: this.#bound.timeoutMs,
        deleteSlotDir: (slotDir, image, inUse) =>
          withSlotLock(
            slotDir,
            async () => {
              if (!(await inUse())) await this.#deleteSlotDir(slotDir, image);
            },
            { onWarning: this.#options.onWarning },
          ),
      }),
    );
  }

  /**
   * Cancels idle timers, closes every session shell, cleans up non-persistent containers
   * this process made, and waits (at most `timeoutMs`, default 15 s) for all outstanding
   * cleanups.
   */
  async shutdown(timeoutMs: number = Defaults.shutdownTimeoutMs): Promise<void> {
    this.#idle?.cancelAll();
    this.#shells.closeAll();
    if (!this.#settings.persistent) {
      for (const slot of [...this.#handles.keys()]) this.cleanup(slot).catch(() => undefined);
    }
    const all = Promise.allSettled([...this.#pending]);
    await withTimeout(all, timeoutMs, "sandbox shutdown").catch(() => undefined);
  }

  /**
   * Runs `fn` holding the slot directory's lock, shared with every Sandbox of this process
   * and with other processes ({@link withSlotLock}).
   */
  #locked<T>(slot: string, fn: () => Promise<T>): Promise<T> {
    return withSlotLock(this.slotDirectory(slot), fn, { onWarning: this.#options.onWarning });
  }

  /** Deletes a slot directory where no link can lead out of it; call under its lock. */
  #deleteSlotDir(slotDir: string, image: string): Promise<void> {
    return deleteSlotDirectory(slotDir, {
      docker: this.#docker,
      image,
      profile: this.profile,
      bound: this.#bound,
    });
  }

  #dropSlot(slot: string): string | undefined {
    this.#idle?.cancel(slot);
    const id = this.#handles.get(slot);
    this.#handles.delete(slot);
    this.#shells.closeSlot(slot);
    return id;
  }

  /**
   * After a failed or timed-out acquire: if the provisioning still produces a container
   * (an id, or the unique name of a create that was cut off), stop and remove it under the
   * slot lock, unless a later acquire of this process holds it by then. Tracked, so `shutdown()` awaits it; otherwise a container made after the
   * timeout would run until someone noticed (with random names, never adopted).
   */
  #discardLate(slot: string, provisioning: Promise<string>): void {
    const late = provisioning.then(
      (id) =>
        this.#locked(slot, async () => {
          if (this.#handles.get(slot) === id) return;
          await destroyContainer(this.#docker, id, Defaults.stopGraceSeconds, this.#bound);
        }),
      () => undefined,
    );
    this.#track(
      late.catch((error: unknown) => {
        this.#options.onWarning?.(`could not remove a late container of ${slot}`, error);
      }),
    );
  }

  #track<T>(work: Promise<T>): Promise<T> {
    this.#pending.add(work);
    const forget = () => this.#pending.delete(work);
    work.then(forget, forget);
    return work;
  }

  async #reapOnce(): Promise<void> {
    if (!this.#settings.orphanReaper) return;
    const key = `${this.#options.engine.endpoint}|${sanitizeLabelValue(this.profile)}`;
    if (reapedThisProcess.has(key)) return;
    reapedThisProcess.add(key);
    try {
      const result = await this.reapOrphans();
      for (const failure of result.failed) {
        this.#options.onWarning?.(`could not reap container ${failure.id}: ${failure.error}`);
      }
    } catch (error) {
      this.#options.onWarning?.("orphan reaper failed", error);
    }
  }

  /**
   * Runs `fn` on the slot's container; when the container vanished or stopped underneath
   * (404/409 on exec), drops the stale handle, acquires again and retries once.
   */
  async #withContainer<T>(
    operation: string,
    slot: string,
    fn: (containerId: string) => Promise<T>,
  ): Promise<T> {
    const work = () => this.#onContainer(operation, slot, fn);
    if (this.#idle === undefined) return work();
    return this.#idle.using(slot, work, () => this.#handles.has(slot));
  }

  async #onContainer<T>(
    operation: string,
    slot: string,
    fn: (containerId: string) => Promise<T>,
  ): Promise<T> {
    const { containerId } = await this.acquire(slot);
    try {
      return await this.#guard(operation, slot, () => fn(containerId), containerId);
    } catch (error) {
      if (!(error instanceof SandboxError) || !isGone(error.cause)) throw error;
      if (this.#handles.get(slot) === containerId) this.#handles.delete(slot);
      const again = await this.acquire(slot);
      return this.#guard(operation, slot, () => fn(again.containerId), again.containerId);
    }
  }

  #guard<T>(
    operation: string,
    slot: string,
    fn: () => Promise<T>,
    containerId?: string,
  ): Promise<T> {
    return guarded(this.#options.engine.endpoint, { operation, slot, containerId }, fn);
  }
}
