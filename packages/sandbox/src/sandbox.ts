import { Defaults } from "./defaults.js";
import { Housekeeping } from "./housekeeping.js";
import { SandboxContext } from "./sandbox-context.js";
import type { SandboxOptions } from "./sandbox-options.js";
import { SessionIo } from "./session-io.js";
import { SlotLifecycle } from "./slot-lifecycle.js";
import type {
  ContainerFile,
  ContainerInventory,
  ContainerLink,
  ContainerState,
  ContainerSummary,
  ExecOptions,
  ExecResult,
  InboxFile,
  InboxKind,
  InboxOptions,
  InboxResult,
  LegacyContainer,
  ReapOptions,
  ReapReport,
  ReapResult,
  SessionIdentity,
} from "./types.js";

/**
 * The Docker sandbox of one profile (docs/sandbox.md): one container per slot, reused across
 * processes, hardened; one-shot exec and a persistent shell per chat session; cleanup
 * bounded by timeouts and awaited on shutdown; the orphan reaper.
 *
 * A facade over its three parts, which share one `SandboxContext`: the slot lifecycle
 * (`slot-lifecycle.ts`: acquire, status, cleanup, remove, idle timers, shutdown), session I/O
 * (`session-io.ts`: exec, run, kills, the inbox, reading files back) and housekeeping
 * (`housekeeping.ts`: listing and the orphan reaper).
 */
export class Sandbox {
  readonly profile: string;
  /** The install id (see `installIdOf`): the `mediagate.install` label of its containers. */
  readonly install: string;
  readonly #ctx: SandboxContext;
  readonly #slots: SlotLifecycle;
  readonly #io: SessionIo;
  readonly #housekeeping: Housekeeping;

  constructor(options: SandboxOptions) {
    this.#ctx = new SandboxContext(options);
    this.profile = this.#ctx.profile;
    this.install = this.#ctx.install;
    this.#housekeeping = new Housekeeping(this.#ctx);
    this.#slots = new SlotLifecycle(this.#ctx, this.#housekeeping);
    this.#io = new SessionIo(this.#ctx, this.#slots);
  }

  /** The host directory of a slot: `<home>/sandboxes/docker/<sanitizeForPath(slot)>`. */
  slotDirectory(slot: string): string {
    return this.#ctx.slotDirectory(slot);
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
  acquire(slot: string, signal?: AbortSignal): Promise<{ containerId: string }> {
    return this.#slots.acquire(slot, signal);
  }

  /**
   * One-shot exec in the slot's container: a string runs under `sh -c`, an array as argv.
   * Timeout/abort kill every process the exec started. Default timeout 120 s, output cap
   * 1 MiB per stream. In per-session mode it runs as the dedicated one-shot uid
   * (`Defaults.sessionUidBase`, group `Defaults.sandboxGid`, `HOME=/root`; a string command
   * with umask 002, an argv with the image's): never root, and never a session's uid, so
   * it cannot touch any session's state.
   */
  exec(slot: string, command: string | string[], opts?: ExecOptions): Promise<ExecResult> {
    return this.#io.exec(slot, command, opts);
  }

  /**
   * Runs `command` in the session's persistent shell in the slot's container: cwd and
   * exported env persist between this session's calls and never leak to another session.
   * Calls of one session run one at a time. `opts.cwd` changes directory first (and
   * persists like a `cd`); `opts.env` applies to this call only. When the shell cannot be
   * opened the call runs as a one-shot exec with the same state (the shell is retried next
   * call). The timeout counts from when the command starts, not while queued.
   */
  run(slot: string, sessionKey: string, command: string, opts?: ExecOptions): Promise<ExecResult> {
    return this.#io.run(slot, sessionKey, command, opts);
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
  saveToInbox<K extends InboxKind>(
    slot: string,
    files: readonly InboxFile[],
    opts: InboxOptions<K>,
  ): Promise<InboxResult<K>[]> {
    return this.#io.saveToInbox(slot, files, opts);
  }

  /**
   * Kills every process the session started (background ones too) in every container this
   * sandbox holds, including its shell; the session's cwd/env survive for its next call.
   * Returns how many processes were killed.
   */
  killSession(sessionKey: string): Promise<number> {
    return this.#io.killSession(sessionKey);
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
  killSlot(slot: string): Promise<number> {
    return this.#io.killSlot(slot);
  }

  /** The slot's container and its state; `undefined` when the slot has none. */
  status(slot: string): Promise<{ containerId: string; state: ContainerState } | undefined> {
    return this.#slots.status(slot);
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
  cleanup(slot: string, opts?: { force?: boolean; deleteDirs?: boolean }): Promise<void> {
    return this.#slots.cleanup(slot, opts);
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
  readFile(
    slot: string,
    containerPath: string,
    maxBytes: number,
    opts?: { sessionKey?: string | undefined },
  ): Promise<ContainerFile | ContainerLink | undefined> {
    return this.#io.readFile(slot, containerPath, maxBytes, opts);
  }

  /**
   * Who the session's commands run as in the slot's container, without starting one: the
   * media delivery sends a file found on the host only if this user could read it there
   * (docs/security.md, "Files in replies"). Per-session mode: the session's uid in that
   * container (looked up, never claimed; `undefined` when it never ran there or no container
   * runs) and the sandbox group. Root mode: the container's user and its groups (`id`), or no
   * uid and no group when no container runs. Per-session mode costs one root `docker exec` the
   * first time this process asks for the session in that container and none after (a claim is
   * never released while the container lives); root mode one exec as the container's user.
   */
  sessionIdentity(slot: string, sessionKey: string): Promise<SessionIdentity> {
    return this.#io.sessionIdentity(slot, sessionKey);
  }

  /**
   * Starts keeping the warm pool full (docs/sandbox.md, "Warm pool"): with per-session
   * settings and `settings.warmPool` above 0, that many started containers wait for new
   * sessions, which claim one instead of creating theirs. Resolves once the pool is full (or
   * a fill failed: the failure goes to `onWarning`); a no-op otherwise. The gateway calls it
   * at start, after the orphan reap.
   */
  async warmUp(): Promise<void> {
    this.#slots.pool.arm();
    await this.#slots.pool.filled();
  }

  /** The containers the warm pool holds ready now (no Docker call). */
  warmContainers(): string[] {
    return this.#slots.pool.readyContainers();
  }

  /** This profile's containers of this install (all states), newest first. */
  list(): Promise<ContainerSummary[]> {
    return this.#housekeeping.list();
  }

  /**
   * {@link list} with what the web console shows of each container: its slot directory,
   * process count, and why the orphan reaper would remove it (the reaper's own rules). Only looks.
   */
  inventory(): Promise<ContainerInventory[]> {
    return this.#housekeeping.inventory();
  }

  /**
   * Containers without an install label (made by a version before installs were labelled)
   * that concern this profile: bound into this install's slot dirs (`slotDir` set; retired at
   * the next first acquire or `reapOrphans`), or labelled with this profile's name but not
   * attributable to this install (`slotDir` undefined; never touched). Newest first.
   */
  legacyContainers(): Promise<LegacyContainer[]> {
    return this.#housekeeping.legacyContainers();
  }

  /**
   * Stops and removes a container of this profile and install, named by slot key or by
   * container id or name. Slot dirs are kept. A container of another profile or install
   * (or not ours) is refused; one that is already gone counts as removed.
   */
  remove(containerIdOrSlot: string): Promise<void> {
    return this.#slots.remove(containerIdOrSlot);
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
  reapOrphans(opts?: ReapOptions): Promise<ReapReport> {
    return this.#housekeeping.reapOrphans(opts);
  }

  /**
   * Cancels idle timers, closes every session shell, cleans up non-persistent containers
   * this process made, and waits (at most `timeoutMs`, default `Defaults.shutdownTimeoutMs`)
   * for all outstanding cleanups.
   */
  shutdown(timeoutMs: number = Defaults.shutdownTimeoutMs): Promise<void> {
    return this.#slots.shutdown(timeoutMs);
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
    return this.#housekeeping.reapOrphansOnce();
  }

  /**
   * Holds the once-per-process reap ({@link reapOrphansOnce}, which the first `acquire` also
   * starts, in the background) until `until` settles: a restarted gateway first resumes the
   * replies a dead process left, whose files are in that process's per-session slot
   * directories. Every reap of this process then keeps the directories of the slots `keep`
   * names when it runs (those of replies still pending: a retry later sends their files);
   * their containers go as before. Call before the first `acquire`.
   */
  deferReap(until: Promise<unknown>, keep?: () => Promise<Iterable<string>>): void {
    this.#housekeeping.deferReap(until, keep);
  }

  /**
   * Deletes the slot's directory if a process that is gone left it (per-session, bound by no
   * container, its owner gone) and `deferReap`'s `keep` no longer names it: the gateway calls it
   * when a reply that may have kept it is closed. Honours `orphanReaper: false`; never throws
   * (failures go to `onWarning`).
   */
  sweepSlotDir(slot: string): Promise<void> {
    return this.#housekeeping.sweepSlotDir(slot);
  }
}
