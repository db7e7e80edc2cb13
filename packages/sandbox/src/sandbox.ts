import { isAbsolute, join } from "node:path";
import { deadline, type Schedule, settledWithin, untilAborted } from "@mediagate/io";
import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { inventoryContainers } from "./container-inventory.js";
import { readInContainer } from "./container-read.js";
import { destroyContainer, findSlotContainers, toState } from "./containers.js";
import { Defaults } from "./defaults.js";
import { dockerOf } from "./docker-client.js";
import { guarded, isNotFound } from "./docker-errors.js";
import type { DockerEngine } from "./engine.js";
import {
  ImageMissingError,
  SandboxError,
  SandboxLostError,
  type SlotDirectoryError,
} from "./errors.js";
import { type ExecUser, OneShotUser, SessionHome, type UserMode, userModeOf } from "./exec-user.js";
import { IdleSlots } from "./idle-slots.js";
import { ensureImage, forgetImage } from "./image-ready.js";
import { InboxSaves, inboxRecipient, saveInboxFiles } from "./inbox.js";
import { ArchiveInbox } from "./inbox-archive.js";
import { discard } from "./inbox-bytes.js";
import { HostInbox } from "./inbox-host.js";
import { installIdOf } from "./install.js";
import { listProfileContainers, removeOwnContainer } from "./inventory.js";
import { type ContainerOwner, sanitizeLabelValue } from "./labels.js";
import { listLegacyContainers, retireLegacyContainers } from "./legacy.js";
import { execOnce } from "./one-shot-exec.js";
import { killFromOutside } from "./outside-kill.js";
import { provisionContainer } from "./provision.js";
import {
  reapAgeSeconds,
  sandboxRootsOf,
  sweepContainerlessScratchDirs,
  sweepGoneOwners,
  sweepOrphans,
} from "./reaper.js";
import { sessionHash } from "./session-hash.js";
import { sessionIdentity } from "./session-identity.js";
import { isGone, SessionShells } from "./session-shells.js";
import { sessionUser } from "./session-user.js";
import { SessionUmask } from "./shell-scripts.js";
import { deleteSlotDirectory } from "./slot-dirs.js";
import { slotDirectoryFor, slotRootOf } from "./slot-key.js";
import { withSlotLock } from "./slot-lock.js";
import { slotPaths } from "./slot-paths.js";
import type {
  ContainerFile,
  ContainerInventory,
  ContainerLink,
  ContainerState,
  ContainerSummary,
  ExecOptions,
  ExecResult,
  ImagePullProgress,
  InboxFile,
  InboxKind,
  InboxOptions,
  InboxResult,
  LegacyContainer,
  ReapOptions,
  ReapReport,
  ReapResult,
  SandboxSettings,
  SessionIdentity,
} from "./types.js";

/** Options of {@link Sandbox}. */
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

/**
 * The automatic reap of each profile (`endpoint|install|profile`) in this process: it runs
 * once, and every acquire waits for it, so nothing is provisioned while it still runs.
 */
const reapedThisProcess = new Map<string, Promise<ReapResult | undefined>>();

/**
 * Legacy sweeps of this process (`endpoint|install|profile home`), run before the first
 * provisioning, whatever `orphanReaper` says (see `retireLegacyContainers`).
 */
const legacyRetired = new Map<string, Promise<void>>();

/**
 * The Docker sandbox of one profile (docs/sandbox.md): one container per slot, reused across
 * processes, hardened; one-shot exec and a persistent shell per chat session; cleanup
 * bounded by timeouts and awaited on shutdown; the orphan reaper.
 */
export class Sandbox {
  readonly profile: string;
  /** The install id (see `installIdOf`): the `mediagate.install` label of its containers. */
  readonly install: string;
  readonly #options: SandboxOptions;
  readonly #docker: Docker;
  readonly #now: () => number;
  readonly #bound: CallBound;
  readonly #handles = new Map<string, string>();
  readonly #shells: SessionShells;
  readonly #users: UserMode;
  readonly #pending = new Set<Promise<unknown>>();
  readonly #inboxSaves = new InboxSaves();
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
    this.install = installIdOf(options.rootHome);
    this.#now = options.now ?? Date.now;
    this.#bound = { timeoutMs: options.operationTimeoutMs ?? Defaults.operationTimeoutMs };
    this.#users = userModeOf(options.settings);
    const maxOpenShells = options.settings.maxOpenShells ?? Defaults.settings.maxOpenShells;
    if (!Number.isSafeInteger(maxOpenShells) || maxOpenShells < 1) {
      throw new TypeError(
        `Sandbox needs settings.maxOpenShells to be a positive integer (got ${maxOpenShells}); leave it out for ${Defaults.settings.maxOpenShells}`,
      );
    }
    this.#shells = new SessionShells(this.#docker, {
      mode: this.#users,
      maxOpenShells,
      onWarning: options.onWarning,
    });
    if (!options.settings.persistent) {
      const idleMs = options.idleCleanupMs ?? options.settings.lifetimeSeconds * 1000;
      this.#idle = new IdleSlots(
        idleMs,
        (slot) => {
          this.#cleanup(slot, {}, true).catch((error: unknown) => {
            options.onWarning?.(`idle cleanup of ${slot} failed`, error);
          });
        },
        options.schedule,
      );
    }
  }

  get #settings(): SandboxSettings {
    return this.#options.settings;
  }

  get #owner(): ContainerOwner {
    return { install: this.install, profile: this.profile };
  }

  get #sandboxRoots(): string[] {
    return sandboxRootsOf(this.#options.profileHome, this.#options.rootHome);
  }

  /** The host directory of a slot: `<home>/sandboxes/docker/<sanitizeForPath(slot)>`. */
  slotDirectory(slot: string): string {
    return slotDirectoryFor(slot, this.#options);
  }

  /**
   * The slot's container, created or reused under the slot directory's lock (one for the
   * whole process, whichever profile asks, and a lock file other processes honour), so
   * concurrent callers get one container and a slot is never provisioned while it is being
   * deleted. The slot directory is made ready first: 0700, its disk ceiling mounted
   * (`diskLimitBytes`), `workspace/` and `home/` for the sandbox group. The first call of the process runs the orphan reaper (unless
   * disabled) and looks for the image, pulling it when the engine lacks it (progress to
   * `onPullProgress`; `ImageMissingError` with the engine's reason when it cannot be pulled).
   * A warm call returns the cached id without asking Docker (a container that
   * vanished since is noticed by the next exec, which acquires again). Each Docker call
   * is bounded by `operationTimeoutMs` and the whole by `provisionTimeoutMs`; a container
   * that is still being made then (or that a cut-off create may still make) is removed as
   * soon as the daemon answers (unless an acquire adopted it meanwhile), and `shutdown()`
   * awaits that removal. An abort of `signal` (run, exec and saveToInbox hand theirs over)
   * ends the wait at once, for the image, the slot's lock or the provisioning, rejecting with
   * its reason; a container the provisioning still makes is removed the same way (docs/durability.md,
   * "Stopping"). With non-persistent settings every acquire, exec and run restarts
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
    // Before the lock: the reaper takes the locks of the slot directories it deletes. A
    // shared sweep: an abort stops this caller's wait, not the sweep.
    await untilAborted(this.#retireLegacyOnce(), signal);
    // Before the lock and outside the provisioning bound: a pull may take minutes.
    await this.#guard("acquire", slot, () =>
      ensureImage(this.#options.engine, this.#settings.image, {
        onProgress: this.#options.onPullProgress,
        stallTimeoutMs: this.#options.pullStallTimeoutMs,
        inspectTimeoutMs: this.#bound.timeoutMs,
        signal,
      }),
    );
    // Started, not awaited: reaping many dead sessions takes a contained delete each, and no
    // turn should wait for that. Provisioning and the reap serialise per slot on its lock.
    void this.reapOrphansOnce();
    // An abort stops the wait for the lock (another call may be provisioning the slot) and
    // for the provisioning; a container it still makes is removed by #discardLate.
    const locked = this.#locked(slot, async () => {
      const held = this.#handles.get(slot);
      if (held !== undefined) return { containerId: held };
      signal?.throwIfAborted();
      const provisioning = provisionContainer({
        docker: this.#docker,
        owner: this.#owner,
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
          deadline(provisioning, { timeoutMs, what: `acquiring ${slot}`, signal }),
        );
      } catch (error) {
        this.#discardLate(slot, provisioning);
        if (error instanceof ImageMissingError) forgetImage(this.#options.engine, error.image);
        throw error;
      }
      this.#handles.set(slot, containerId);
      return { containerId };
    });
    return untilAborted(locked, signal);
  }

  /**
   * One-shot exec in the slot's container: a string runs under `sh -c`, an array as argv.
   * Timeout/abort kill every process the exec started. Default timeout 120 s, output cap
   * 1 MiB per stream. In per-session mode it runs as the dedicated one-shot uid
   * (`Defaults.sessionUidBase`, group `Defaults.sandboxGid`, `HOME=/root`; a string command
   * with umask 002, an argv with the image's): never root, and never a session's uid, so
   * it cannot touch any session's state.
   */
  async exec(
    slot: string,
    command: string | string[],
    opts: ExecOptions = {},
  ): Promise<ExecResult> {
    if (!this.#users.perSession) {
      const argv = typeof command === "string" ? ["sh", "-c", command] : command;
      return this.#withContainer("exec", slot, opts.signal, (id) =>
        execOnce(this.#docker, id, argv, { ...opts, killOnStop: true }),
      );
    }
    // Same line, so the command's own line numbers in error messages stay as they were.
    const argv =
      typeof command === "string" ? ["sh", "-c", `umask ${SessionUmask}; ${command}`] : command;
    const env = { ...SessionHome, ...opts.env };
    return this.#withContainer("exec", slot, opts.signal, (id) =>
      execOnce(this.#docker, id, argv, {
        ...opts,
        env,
        killOnStop: true,
        user: OneShotUser,
        rescuer: this.#users.housekeeper,
      }),
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
      this.#withContainer("run", slot, opts.signal, async (containerId) => {
        await opts.beforeCommand?.();
        return this.#shells.run(slot, sessionKey, containerId, command, opts);
      }),
    );
  }

  /**
   * Saves files a user sent into `/workspace/inbox/` of the slot's container (acquired as for
   * `run`), for the session `opts.sessionKey` (docs/sandbox.md, "Files users send"). Each file
   * is streamed (never held in memory), counted against its `maxBytes`, hashed, classified by
   * its first bytes (`opts.classify`), and appears under a sanitized, unique name
   * ({@link inboxFileName}, then `-2`, `-3`…) only once complete, owned by the user the
   * session's commands run as. Bind slots on a local engine are written from the host through
   * the slot directory without following any link the container made; tmpfs slots and remote
   * engines through the engine's archive API and a copy by the session's own user. Files go
   * one after the other, in order; one that fails (over its limit, its source failed, no
   * space, the inbox is a link, aborted or the slot reset) is `refused` with the reason and
   * leaves nothing, and the rest are still saved. Answers one result per file, in order.
   * Throws a `TypeError` for a `maxBytes` that is not a byte count, and a {@link SandboxError}
   * when the container cannot be had; sources not read are then destroyed.
   */
  async saveToInbox<K extends InboxKind>(
    slot: string,
    files: readonly InboxFile[],
    opts: InboxOptions<K>,
  ): Promise<InboxResult<K>[]> {
    for (const file of files) {
      if (!Number.isSafeInteger(file.maxBytes) || file.maxBytes < 0) {
        for (const each of files) discard(each.source);
        throw new TypeError(
          `saveToInbox needs maxBytes to be a byte count (got ${file.maxBytes} for ${JSON.stringify(file.name)}): every file has a limit`,
        );
      }
    }
    try {
      return await this.#withContainer("saveToInbox", slot, opts.signal, (containerId) =>
        this.#inboxSaves.run(slot, opts.signal, (signal) =>
          this.#saveToInbox(slot, containerId, files, opts, signal),
        ),
      );
    } catch (error) {
      for (const file of files) discard(file.source);
      throw error;
    }
  }

  async #saveToInbox<K extends InboxKind>(
    slot: string,
    containerId: string,
    files: readonly InboxFile[],
    opts: InboxOptions<K>,
    signal: AbortSignal,
  ): Promise<InboxResult<K>[]> {
    const recipient = await inboxRecipient(this.#docker, containerId, this.#users, opts.sessionKey);
    const slotDir = this.slotDirectory(slot);
    const workspace = join(slotDir, "workspace");
    const noSpace = (filename: string) => `${filename}: ${this.#noSpaceReason()}`;
    // The slot directory is the container's /workspace only when the engine runs here.
    const onHost =
      this.#settings.filesystem === "bind" && this.#options.engine.endpoint.startsWith("unix://");
    return saveInboxFiles({
      files,
      classify: opts.classify,
      signal,
      hostDir: onHost ? join(workspace, "inbox") : undefined,
      noSpace,
      open: onHost
        ? () => HostInbox.open(workspace, recipient.owner)
        : () =>
            ArchiveInbox.open({
              docker: this.#docker,
              containerId,
              ...recipient,
              housekeeper: this.#users.housekeeper,
              spoolDir: join(slotPaths(slotDir).sandboxesDir, "spool"),
              timeoutMs: this.#bound.timeoutMs,
              signal,
              noSpace,
              noStagingSpace: (filename) =>
                `${filename}: no space left to stage it in /run/mediagate (its size is ${mib(this.#settings.scratchBytes)}: sandbox.scratchBytes)`,
            }),
    });
  }

  /** Which ceiling a full `/workspace` hit, for a refused inbox file. */
  #noSpaceReason(): string {
    const { filesystem, tmpfsBytes, diskLimitBytes } = this.#settings;
    if (filesystem === "tmpfs")
      return `no space left in /workspace (its size is ${mib(tmpfsBytes)})`;
    if (diskLimitBytes > 0) {
      return `no space left in the slot (its disk ceiling is ${mib(diskLimitBytes)})`;
    }
    return "no space left on the host disk";
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

  /**
   * Kills every process any session (of any profile or gateway process) or one-shot exec
   * started in the slot's running container, never the container itself; what `/stop all`
   * does. In per-session mode that is every process of a sandbox uid. The kill runs from
   * outside the container ({@link killFromOutside}: a throwaway container in the target's
   * PID namespace and its own cgroup), so it works on the first try when fork loops hold the
   * container at its pids limit, where nothing can be started inside. This sandbox's shells
   * in the slot are closed (they reopen, with their state, on the next call). Returns how
   * many processes were killed; 0 when the slot has no running container.
   */
  async killSlot(slot: string): Promise<number> {
    return this.#guard("killSlot", slot, async () => {
      const ids = new Set<string>();
      const held = this.#handles.get(slot);
      if (held !== undefined) ids.add(held);
      const found = await findSlotContainers(this.#docker, this.#owner, slot, this.#bound);
      for (const c of found) if (c.State === "running") ids.add(c.Id);
      const outside = { docker: this.#docker, owner: this.#owner, bound: this.#bound };
      let killed = 0;
      try {
        for (const id of ids) {
          killed += await killFromOutside(outside, id, this.#shells.everySession(), this.#users);
        }
      } finally {
        this.#shells.closeSlot(slot);
      }
      return killed;
    });
  }

  /** The slot's container and its state; `undefined` when the slot has none. */
  async status(slot: string): Promise<{ containerId: string; state: ContainerState } | undefined> {
    return this.#guard("status", slot, async () => {
      let id = this.#handles.get(slot);
      if (id === undefined) {
        const found = await findSlotContainers(this.#docker, this.#owner, slot, this.#bound);
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
   * Ends a slot's use (docs/sandbox.md). `force`: stop (10 s grace) and remove the container;
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
      // A save still writing would hold the inbox open (and the slot's disk mounted).
      await this.#inboxSaves.stop(slot, Defaults.killGraceMs);
      const ids = new Set(id === undefined ? [] : [id]);
      if (this.#settings.persistAcrossProcesses || id === undefined) {
        const found = await findSlotContainers(this.#docker, this.#owner, slot, this.#bound);
        for (const c of found) ids.add(c.Id);
      }
      for (const containerId of ids) {
        await destroyContainer(this.#docker, containerId, Defaults.stopGraceSeconds, this.#bound);
      }
      const deleteDirs = force ? opts.deleteDirs === true : opts.deleteDirs !== false;
      if (deleteDirs) await this.#deleteSlotDir(this.slotDirectory(slot), this.#settings.image);
    });
    await this.#guard("cleanup", slot, () =>
      deadline(this.#track(work), {
        timeoutMs: Defaults.cleanupTimeoutMs,
        what: `cleanup of ${slot}`,
      }),
    );
  }

  /**
   * Reads a regular file from the slot's live container, without starting one (the media
   * fallback for a file on no host mount). A process in the container opens the path and the
   * kernel names the file it opened; the content is sent only when that name is the path
   * asked for, so no rename or symlink swap in the container can make it read another file.
   * When any component of `containerPath` is a symlink or the path is not normalised (`.`,
   * `..`, `//`), the answer is `{ linkTarget }` with the real path and nothing is read; the
   * caller checks that path and asks again. With per-session users the reader runs as the
   * uid of `opts.sessionKey` (or the one-shot uid without a session), so it reads nothing that
   * session could not read itself — never another session's private files; in root mode it
   * runs as the container's user. `undefined` when the slot has no running container or the
   * path is missing or not a regular file; over `maxBytes`, the real size comes back and the
   * stream fails on read.
   */
  async readFile(
    slot: string,
    containerPath: string,
    maxBytes: number,
    opts: { sessionKey?: string | undefined } = {},
  ): Promise<ContainerFile | ContainerLink | undefined> {
    const current = await this.status(slot);
    if (current === undefined || current.state !== "running") return undefined;
    const { containerId } = current;
    return this.#guard(
      "readFile",
      slot,
      async () => {
        let user: ExecUser | undefined;
        if (this.#users.perSession) {
          user =
            opts.sessionKey === undefined
              ? OneShotUser
              : await sessionUser(this.#docker, containerId, sessionHash(opts.sessionKey), true);
        }
        const read = await readInContainer(this.#docker, containerId, containerPath, maxBytes, {
          bound: this.#bound,
          user,
          track: (work) => this.#track(work),
        });
        if (read !== undefined || user === undefined) return read;
        // The session could not open it: where do its links lead? The caller's policy judges
        // that path (a link into a protected directory is withheld, not "not found"); nothing
        // is read as root.
        const real = await this.#realPath(containerId, containerPath);
        return real !== undefined && real !== containerPath ? { linkTarget: real } : undefined;
      },
      containerId,
    );
  }

  /**
   * Who the session's commands run as in the slot's container, without starting one: the
   * media delivery sends a file found on the host only if this user could read it there
   * (docs/security.md, "Files in replies"). Per-session mode: the session's uid in that
   * container (looked up, never claimed; `undefined` when it never ran there or no container
   * runs) and the sandbox group. Root mode: the container's user and its groups (`id`), or no
   * uid and no group when no container runs. One root `docker exec` (per-session) or one as
   * the container's user (root mode) when a container runs.
   */
  async sessionIdentity(slot: string, sessionKey: string): Promise<SessionIdentity> {
    const current = await this.status(slot);
    const containerId = current?.state === "running" ? current.containerId : undefined;
    return this.#guard(
      "sessionIdentity",
      slot,
      () =>
        sessionIdentity(this.#docker, containerId, this.#users, sessionKey, this.#bound.timeoutMs),
      containerId,
    );
  }

  /** `readlink -f` of a container path as root (links resolved, nothing opened), if it has one. */
  async #realPath(containerId: string, path: string): Promise<string | undefined> {
    const result = await execOnce(this.#docker, containerId, ["readlink", "-f", "--", path], {
      timeoutMs: this.#bound.timeoutMs,
      killOnStop: false,
      user: this.#users.housekeeper,
    });
    const real = result.stdout.replace(/\n$/, "");
    return result.exitCode === 0 && real.startsWith("/") ? real : undefined;
  }

  /** This profile's containers of this install (all states), newest first. */
  async list(): Promise<ContainerSummary[]> {
    return this.#guard("list", "*", () =>
      listProfileContainers(this.#docker, this.#owner, this.#bound),
    );
  }

  /**
   * {@link list} with what the web console shows of each container: its slot directory,
   * process count, and why the orphan reaper would remove it (the reaper's own rules). Only looks.
   */
  async inventory(): Promise<ContainerInventory[]> {
    const minAgeSeconds = reapAgeSeconds(this.#settings.lifetimeSeconds);
    return this.#guard("list", "*", () =>
      inventoryContainers(
        this.#docker,
        this.#owner,
        this.#sandboxRoots,
        minAgeSeconds,
        new Date(this.#now()),
        this.#bound,
      ),
    );
  }

  /**
   * Containers without an install label (made by a version before installs were labelled)
   * that concern this profile: bound into this install's slot dirs (`slotDir` set; retired at
   * the next first acquire or `reapOrphans`), or labelled with this profile's name but not
   * attributable to this install (`slotDir` undefined; never touched). Newest first.
   */
  async legacyContainers(): Promise<LegacyContainer[]> {
    return this.#guard("list", "*", () =>
      listLegacyContainers(this.#docker, this.#owner, this.#sandboxRoots, this.#bound),
    );
  }

  /**
   * Stops and removes a container of this profile and install, named by slot key or by
   * container id or name. Slot dirs are kept. A container of another profile or install
   * (or not ours) is refused; one that is already gone counts as removed.
   */
  async remove(containerIdOrSlot: string): Promise<void> {
    const bySlot = await this.#guard("remove", containerIdOrSlot, () =>
      findSlotContainers(this.#docker, this.#owner, containerIdOrSlot, this.#bound),
    );
    if (bySlot.length > 0 || this.#handles.has(containerIdOrSlot)) {
      await this.cleanup(containerIdOrSlot, { force: true, deleteDirs: false });
      return;
    }
    const removed = await this.#guard("remove", containerIdOrSlot, () =>
      removeOwnContainer(this.#docker, this.#owner, containerIdOrSlot, this.#bound),
    );
    for (const [slot, id] of this.#handles) if (id === removed) this.#dropSlot(slot);
  }

  /**
   * Removes what this install's and this profile's earlier processes left behind:
   * - scratch containers (session and task-id slots) whose owning process is gone (the
   *   `mediagate.owner` label: a crashed gateway), running or exited, with their slot dirs,
   *   and delete containers such a process left; never a live owner's, another install's,
   *   or a persistent slot's container (any process reuses those);
   * - exited containers that finished more than `minAgeSeconds` ago (default
   *   `2 × max(Defaults.reaperMinLifetimeSeconds, lifetimeSeconds)`), with the slot dirs of
   *   session and task-id slots; the dirs of `default`, `profile:<name>` and `shared:<key>`
   *   slots are persistent data and kept;
   * - legacy containers (no install label) bound into this install's slot dirs, running or
   *   not, keeping their dirs (see {@link legacyContainers});
   * - per-session slot dirs no container binds (a process killed between making the dir and
   *   its container), each checked again under its lock.
   * Slot dirs are deleted under their lock, where no link leads out of them. Runs whenever
   * called (the CLI's `sandbox reap`); the automatic once-per-process run
   * ({@link reapOrphansOnce}) honours `orphanReaper: false`.
   */
  async reapOrphans(opts: ReapOptions = {}): Promise<ReapReport> {
    const minAgeSeconds = opts.minAgeSeconds ?? reapAgeSeconds(this.#settings.lifetimeSeconds);
    if (!Number.isFinite(minAgeSeconds) || minAgeSeconds < 0) {
      throw new RangeError(
        `reapOrphans: minAgeSeconds must be a number >= 0, got ${minAgeSeconds}`,
      );
    }
    return this.#guard("reapOrphans", "*", async () => {
      const legacy = await retireLegacyContainers(this.#docker, this.#sandboxRoots, this.#bound);
      const orphaned = await sweepGoneOwners({
        docker: this.#docker,
        owner: this.#owner,
        sandboxRoots: this.#sandboxRoots,
        timeoutMs: this.#bound.timeoutMs,
        locked: (slotDir, fn) => withSlotLock(slotDir, fn, { onWarning: this.#options.onWarning }),
        deleteSlotDir: (slotDir, image) => this.#deleteSlotDir(slotDir, image),
      });
      const swept = await sweepOrphans({
        docker: this.#docker,
        owner: this.#owner,
        minAgeSeconds,
        now: opts.now ?? new Date(this.#now()),
        sandboxRoots: this.#sandboxRoots,
        timeoutMs: this.#bound.timeoutMs,
        deleteSlotDir: (slotDir, image, inUse) =>
          withSlotLock(
            slotDir,
            async () => {
              if (!(await inUse())) await this.#deleteSlotDir(slotDir, image);
            },
            { onWarning: this.#options.onWarning },
          ),
      });
      const dirs = await sweepContainerlessScratchDirs({
        docker: this.#docker,
        owner: this.#owner,
        slotRoot: slotRootOf(this.#options.profileHome),
        timeoutMs: this.#bound.timeoutMs,
        locked: (slotDir, fn) => withSlotLock(slotDir, fn, { onWarning: this.#options.onWarning }),
        deleteSlotDir: (slotDir) => this.#deleteSlotDir(slotDir, this.#settings.image),
      });
      return {
        removed: [...legacy.removed, ...orphaned.removed, ...swept.removed, ...dirs.removed],
        failed: [...legacy.failed, ...orphaned.failed, ...swept.failed, ...dirs.failed],
        minAgeSeconds,
      };
    });
  }

  /**
   * Cancels idle timers, closes every session shell, cleans up non-persistent containers
   * this process made, and waits (at most `timeoutMs`, default `Defaults.shutdownTimeoutMs`)
   * for all outstanding cleanups.
   */
  async shutdown(timeoutMs: number = Defaults.shutdownTimeoutMs): Promise<void> {
    this.#idle?.cancelAll();
    this.#shells.closeAll();
    if (!this.#settings.persistent) {
      for (const slot of [...this.#handles.keys()]) this.cleanup(slot).catch(() => undefined);
    }
    const all = Promise.allSettled([...this.#pending]);
    await settledWithin(all, timeoutMs);
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
      owner: this.#owner,
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

  /**
   * Once per process (and profile home): retires legacy containers bound into this install's
   * slot dirs before anything is provisioned, so no old container keeps binding the
   * directories a new one binds. Runs whatever `orphanReaper` says; failures are warnings.
   */
  async #retireLegacyOnce(): Promise<void> {
    const key = `${this.#options.engine.endpoint}|${this.install}|${this.#options.profileHome}`;
    let sweep = legacyRetired.get(key);
    if (sweep === undefined) {
      sweep = retireLegacyContainers(this.#docker, this.#sandboxRoots, this.#bound).then(
        (result) => {
          for (const failure of result.failed) {
            this.#options.onWarning?.(
              `could not retire legacy container ${failure.id}: ${failure.error}`,
            );
          }
        },
        (error: unknown) => {
          legacyRetired.delete(key); // the next acquire tries again
          this.#options.onWarning?.("legacy container sweep failed", error);
        },
      );
      legacyRetired.set(key, sweep);
    }
    await sweep;
  }

  /**
   * The automatic orphan reap ({@link reapOrphans}) of this process for this profile: runs
   * it now unless it ran (or is running) already, and answers its result; `undefined` when
   * `orphanReaper` is off or the reap failed. Never throws: failures go to `onWarning`. The
   * first acquire of the process starts it too, without waiting for it (reaping many dead
   * sessions takes a contained delete each); a gateway calls it at start, so what a crashed
   * process left is removed also for profiles that get no message.
   */
  reapOrphansOnce(): Promise<ReapResult | undefined> {
    if (!this.#settings.orphanReaper) return Promise.resolve(undefined);
    const key = `${this.#options.engine.endpoint}|${this.install}|${sanitizeLabelValue(this.profile)}`;
    let run = reapedThisProcess.get(key);
    if (run === undefined) {
      run = this.reapOrphans().then(
        (result) => {
          for (const failure of result.failed) {
            this.#options.onWarning?.(`could not reap container ${failure.id}: ${failure.error}`);
          }
          return result;
        },
        (error: unknown) => {
          this.#options.onWarning?.("orphan reaper failed", error);
          return undefined;
        },
      );
      reapedThisProcess.set(key, run);
    }
    return run;
  }

  /**
   * Runs `fn` on the slot's container; when the container vanished or stopped underneath
   * before the call started (404/409 on exec), drops the stale handle, acquires again and
   * retries once. One that went away while the call ran ({@link SandboxLostError}) is not
   * retried: the call may have done part of its work.
   */
  async #withContainer<T>(
    operation: string,
    slot: string,
    signal: AbortSignal | undefined,
    fn: (containerId: string) => Promise<T>,
  ): Promise<T> {
    const work = () => this.#onContainer(operation, slot, signal, fn);
    if (this.#idle === undefined) return work();
    return this.#idle.using(slot, work, () => this.#handles.has(slot));
  }

  async #onContainer<T>(
    operation: string,
    slot: string,
    signal: AbortSignal | undefined,
    fn: (containerId: string) => Promise<T>,
  ): Promise<T> {
    const { containerId } = await this.acquire(slot, signal);
    try {
      return await this.#guard(operation, slot, () => fn(containerId), containerId);
    } catch (error) {
      if (error instanceof SandboxLostError) this.#forget(slot, error.containerId);
      if (!(error instanceof SandboxError) || !isGone(error.cause)) throw error;
      if (this.#handles.get(slot) === containerId) this.#handles.delete(slot);
      const again = await this.acquire(slot, signal);
      try {
        return await this.#guard(operation, slot, () => fn(again.containerId), again.containerId);
      } catch (retryError) {
        if (retryError instanceof SandboxLostError) this.#forget(slot, retryError.containerId);
        throw retryError;
      }
    }
  }

  /**
   * A container went away under a command: drops the slot's cached handle (when it is still
   * that container) and the shells open in it, so the next call provisions the slot again.
   * The idle timer of a non-persistent slot keeps running: its cleanup finds the slot's
   * containers by label.
   */
  #forget(slot: string, containerId: string): void {
    if (this.#handles.get(slot) === containerId) this.#handles.delete(slot);
    this.#shells.closeContainer(containerId);
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

/** `bytes` in MiB for messages (`16 MiB`, `0.5 MiB`). */
function mib(bytes: number): string {
  return `${Number((bytes / 1_048_576).toFixed(1))} MiB`;
}
