import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { isConnectionError, statusOf } from "./docker-errors.js";
import { ContainerLostError } from "./errors.js";
import { type ExecUser, SandboxUids, SessionHome, type UserMode } from "./exec-user.js";
import { KeyedLock } from "./keyed-lock.js";
import { exactEntry, type KillSelection } from "./kill-script.js";
import { execOnce, killProcesses, randomHex } from "./one-shot-exec.js";
import { sessionHash } from "./session-hash.js";
import { SessionShell } from "./session-shell.js";
import type { SessionUsers } from "./session-users.js";
import {
  CommandMarker,
  ExecMarker,
  oneShotCommand,
  SessionMarker,
  SessionUmask,
} from "./shell-scripts.js";
import type { ExecOptions, ExecResult } from "./types.js";

/** Container gone (404) or not running (409): the caller's handle is stale. */
export function isGone(error: unknown): boolean {
  const status = statusOf(error);
  return status === 404 || status === 409;
}

interface Entry {
  readonly slot: string;
  readonly sessionKey: string;
  readonly shell: SessionShell;
  /** A command is running in the shell: it is never closed to make room. */
  busy: boolean;
  idle?: NodeJS.Timeout;
}

/** Any process a session or a one-shot exec started (root mode: found by its marker). */
const AnySessionMarker = `^(${SessionMarker}|${CommandMarker}|${ExecMarker})=`;

/** Options of {@link SessionShells}. */
export interface SessionShellsOptions {
  readonly mode: UserMode;
  /** Most shells open at once in one container (`SandboxSettings.maxOpenShells`). */
  readonly maxOpenShells: number;
  /** The sessions' uids (per-session mode), shared with the rest of the sandbox. */
  readonly users: SessionUsers;
  readonly onWarning?: ((message: string, cause?: unknown) => void) | undefined;
}

/**
 * The session shells of one sandbox, keyed by (slot, session). Calls of one session run
 * one at a time; sessions run in parallel, each in its own shell. In per-session mode each
 * session runs as its own uid in each container (claimed when its first shell there opens,
 * then remembered).
 *
 * Every open shell is a process in its container, counted against the container's pids
 * limit, so at most `maxOpenShells` are open per container: opening one more first closes
 * the least recently used idle shell of that container (and waits until its process has
 * exited). When every open shell of the container is running a command, the call runs as
 * a one-shot exec with the session's state instead. A closed session keeps its cwd and
 * exports (they live in its state file) and gets a new shell on its next call.
 */
export class SessionShells {
  readonly #docker: Docker;
  readonly #mode: UserMode;
  readonly #maxOpen: number;
  readonly #users: SessionUsers;
  readonly #onWarning: ((message: string, cause?: unknown) => void) | undefined;
  /** In least recently used order: a call moves its session's entry to the end. */
  readonly #entries = new Map<string, Entry>();
  /** Per container: shells being opened, and shells closed to make room that are still exiting. */
  readonly #opening = new Map<string, number>();
  readonly #closing = new Map<string, number>();
  readonly #locks = new KeyedLock();

  constructor(docker: Docker, options: SessionShellsOptions) {
    this.#docker = docker;
    this.#mode = options.mode;
    this.#maxOpen = options.maxOpenShells;
    this.#users = options.users;
    this.#onWarning = options.onWarning;
  }

  /** Serialises `fn` with the session's other calls in `slot`. */
  queue<T>(slot: string, sessionKey: string, fn: () => Promise<T>): Promise<T> {
    return this.#locks.run(`${slot}\0${sessionKey}`, fn);
  }

  /**
   * Runs a command in the session's shell in `containerId`, opening (or reopening) the
   * shell as needed; falls back to a one-shot exec with the same state (and uid) when it
   * cannot be opened or the container has no room for it. A vanished container or
   * unreachable daemon propagates to the caller, and so does a failure to claim the
   * session's uid (a session never runs as root in per-session mode) and a container or
   * engine that went away mid-command (`ContainerLostError`).
   */
  async run(
    slot: string,
    sessionKey: string,
    containerId: string,
    command: string,
    opts: ExecOptions,
  ): Promise<ExecResult> {
    const key = `${slot}\0${sessionKey}`;
    let entry = this.#entries.get(key);
    if (entry !== undefined && (!entry.shell.alive || entry.shell.containerId !== containerId)) {
      this.#drop(key, entry);
      entry = undefined;
    }
    const hash = sessionHash(sessionKey);
    let user: ExecUser | undefined;
    if (entry === undefined) {
      if (this.#mode.perSession) user = await this.#users.claim(containerId, hash);
      entry = await this.#open(key, { slot, sessionKey, containerId, hash, user });
    }
    if (entry !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
      clearTimeout(entry.idle);
      entry.busy = true;
      try {
        return await entry.shell.run(command, opts);
      } finally {
        entry.busy = false;
        if (entry.shell.alive) this.#closeWhenIdle(key, entry);
        else if (this.#entries.get(key) === entry) this.#drop(key, entry);
      }
    }
    const spec = {
      command,
      sessionHash: hash,
      commandId: randomHex(8),
      cwd: opts.cwd,
      env: opts.env,
    };
    const { cwd: _cwd, env: _env, ...rest } = opts;
    const umask = user === undefined ? undefined : SessionUmask;
    return execOnce(this.#docker, containerId, ["sh", "-c", oneShotCommand(spec, umask)], {
      ...rest,
      env: { [SessionMarker]: hash, ...(user === undefined ? {} : SessionHome) },
      user,
      rescuer: this.#mode.housekeeper,
    });
  }

  /**
   * Opens the session's shell once the container has room for it; `undefined` when it has
   * none (every open shell busy) or the shell could not be opened (the caller then runs a
   * one-shot exec). A vanished container or unreachable daemon propagates.
   */
  async #open(
    key: string,
    session: {
      slot: string;
      sessionKey: string;
      containerId: string;
      hash: string;
      user: ExecUser | undefined;
    },
  ): Promise<Entry | undefined> {
    const { containerId } = session;
    if (!(await this.#makeRoom(containerId))) return undefined;
    try {
      const shell = await SessionShell.open(this.#docker, containerId, session.hash, session.user);
      const entry: Entry = {
        slot: session.slot,
        sessionKey: session.sessionKey,
        shell,
        busy: true, // the caller runs its command in it next: never closed to make room
      };
      this.#entries.set(key, entry);
      return entry;
    } catch (error) {
      if (isGone(error) || isConnectionError(error)) throw error;
      this.#onWarning?.("session shell unavailable, using one-shot exec", error);
      return undefined;
    } finally {
      adjust(this.#opening, containerId, -1);
    }
  }

  /**
   * Reserves room for one more shell in the container (counted in `#opening`), closing
   * least recently used idle shells of it while it is at `maxOpenShells`. False when every
   * shell it holds is busy.
   */
  async #makeRoom(containerId: string): Promise<boolean> {
    for (;;) {
      let occupied = (this.#opening.get(containerId) ?? 0) + (this.#closing.get(containerId) ?? 0);
      let idlest: [string, Entry] | undefined;
      for (const [key, entry] of [...this.#entries]) {
        if (entry.shell.containerId !== containerId) continue;
        if (!entry.shell.alive && !entry.busy) {
          this.#drop(key, entry); // its controller has exited already
          continue;
        }
        occupied++;
        if (idlest === undefined && !entry.busy) idlest = [key, entry];
      }
      if (occupied < this.#maxOpen) {
        adjust(this.#opening, containerId, 1);
        return true;
      }
      if (idlest === undefined) return false;
      const [key, entry] = idlest;
      clearTimeout(entry.idle);
      this.#entries.delete(key);
      adjust(this.#closing, containerId, 1);
      try {
        await entry.shell.closeAndWait(Defaults.killGraceMs);
      } finally {
        adjust(this.#closing, containerId, -1);
      }
    }
  }

  /**
   * Closes the session's shells and kills every process of the session in the given
   * containers (plus those its shells ran in): in per-session mode every process of its
   * uid (looked up, never claimed), killed by root, so a fork loop at the uid's process
   * limit cannot stop it; and every process marked with its hash (root mode, and processes
   * left from before per-session users). Returns how many processes were killed.
   */
  async kill(sessionKey: string, containers: Iterable<string>): Promise<number> {
    const targets = new Set(containers);
    const mine = [...this.#entries].filter(([, entry]) => entry.sessionKey === sessionKey);
    for (const [, entry] of mine) targets.add(entry.shell.containerId);
    const hash = sessionHash(sessionKey);
    let killed = 0;
    try {
      for (const id of targets) {
        killed += await this.#killIn(id, async () => {
          const user = this.#mode.perSession ? await this.#users.lookUp(id, hash) : undefined;
          return {
            environ: exactEntry(SessionMarker, hash),
            uids: user === undefined ? undefined : { min: user.uid, max: user.uid },
          };
        });
      }
    } finally {
      // Closed only now: a controller that exits on EOF while its background processes
      // hold its output open stalls the engine's next execs in that container for seconds.
      for (const [key, entry] of mine) this.#drop(key, entry);
    }
    return killed;
  }

  /**
   * Every session's and one-shot exec's processes in a container, never PID 1 or the
   * container's main process: in per-session mode every process of a sandbox uid; in root
   * mode every marked process.
   */
  everySession(): KillSelection {
    return {
      environ: AnySessionMarker,
      uids: this.#mode.perSession ? SandboxUids : undefined,
    };
  }

  /** Runs a kill as the housekeeper; a container that is gone has nothing left to kill. */
  async #killIn(containerId: string, select: () => Promise<KillSelection>): Promise<number> {
    try {
      return await killProcesses(this.#docker, containerId, await select(), this.#mode.housekeeper);
    } catch (error) {
      if (isGone(error) || error instanceof ContainerLostError) return 0;
      throw error;
    }
  }

  /**
   * Every open shell is a process in the container (counted against its pids limit), so a
   * shell idle for `Defaults.shellIdleMs` is closed; its state file keeps cwd and env.
   */
  #closeWhenIdle(key: string, entry: Entry): void {
    entry.idle = setTimeout(() => {
      if (this.#entries.get(key) !== entry) return;
      this.#drop(key, entry);
    }, Defaults.shellIdleMs);
    entry.idle.unref();
  }

  #drop(key: string, entry: Entry): void {
    clearTimeout(entry.idle);
    entry.shell.close();
    this.#entries.delete(key);
  }

  /** Closes the shells open in one container (it went away). */
  closeContainer(containerId: string): void {
    for (const [key, entry] of this.#entries) {
      if (entry.shell.containerId === containerId) this.#drop(key, entry);
    }
  }

  /** Closes the shells of one slot (its container is going away or being let go). */
  closeSlot(slot: string): void {
    for (const [key, entry] of this.#entries) {
      if (entry.slot !== slot) continue;
      this.#drop(key, entry);
    }
  }

  closeAll(): void {
    for (const entry of this.#entries.values()) {
      clearTimeout(entry.idle);
      entry.shell.close();
    }
    this.#entries.clear();
  }
}

/** Adds `delta` to a per-container counter, forgetting it at zero. */
function adjust(counts: Map<string, number>, containerId: string, delta: number): void {
  const next = (counts.get(containerId) ?? 0) + delta;
  if (next > 0) counts.set(containerId, next);
  else counts.delete(containerId);
}
