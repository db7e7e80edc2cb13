import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { isConnectionError, statusOf } from "./docker-errors.js";
import { ContainerLost } from "./errors.js";
import { type ExecUser, SandboxUids, SessionHome, type UserMode } from "./exec-user.js";
import { KeyedLock } from "./keyed-lock.js";
import { exactEntry, type KillSelection } from "./kill-script.js";
import { execOnce, killProcesses, randomHex } from "./one-shot-exec.js";
import { sessionHash } from "./session-hash.js";
import { SessionShell } from "./session-shell.js";
import { sessionUser } from "./session-user.js";
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
  idle?: NodeJS.Timeout;
}

/** Any process a session or a one-shot exec started (root mode: found by its marker). */
const AnySessionMarker = `^(${SessionMarker}|${CommandMarker}|${ExecMarker})=`;

/**
 * The session shells of one sandbox, keyed by (slot, session). Calls of one session run
 * one at a time; sessions run in parallel, each in its own shell. In per-session mode each
 * session runs as its own uid in each container (claimed when its shell opens).
 */
export class SessionShells {
  readonly #docker: Docker;
  readonly #mode: UserMode;
  readonly #onWarning: ((message: string, cause?: unknown) => void) | undefined;
  readonly #entries = new Map<string, Entry>();
  readonly #locks = new KeyedLock();

  constructor(
    docker: Docker,
    mode: UserMode,
    onWarning?: (message: string, cause?: unknown) => void,
  ) {
    this.#docker = docker;
    this.#mode = mode;
    this.#onWarning = onWarning;
  }

  /** Serialises `fn` with the session's other calls in `slot`. */
  queue<T>(slot: string, sessionKey: string, fn: () => Promise<T>): Promise<T> {
    return this.#locks.run(`${slot}\0${sessionKey}`, fn);
  }

  /**
   * Runs a command in the session's shell in `containerId`, opening (or reopening) the
   * shell as needed; falls back to a one-shot exec with the same state (and uid) when it
   * cannot be opened. A vanished container or unreachable daemon propagates to the caller,
   * and so does a failure to claim the session's uid: a session never runs as root in
   * per-session mode.
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
      if (this.#mode.perSession) user = await sessionUser(this.#docker, containerId, hash, true);
      try {
        const shell = await SessionShell.open(this.#docker, containerId, hash, user);
        entry = { slot, sessionKey, shell };
        this.#entries.set(key, entry);
      } catch (error) {
        if (isGone(error) || isConnectionError(error)) throw error;
        this.#onWarning?.("session shell unavailable, using one-shot exec", error);
      }
    }
    if (entry !== undefined) {
      clearTimeout(entry.idle);
      try {
        return await entry.shell.run(command, opts);
      } finally {
        this.#closeWhenIdle(key, entry);
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
          const user = this.#mode.perSession
            ? await sessionUser(this.#docker, id, hash, false)
            : undefined;
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
   * Kills every session's and one-shot exec's processes in the container, never PID 1 or
   * the container's main process: in per-session mode every process of a sandbox uid;
   * in root mode every marked process. Returns how many processes were killed.
   */
  async killAll(containerId: string): Promise<number> {
    return this.#killIn(containerId, async () => ({
      environ: AnySessionMarker,
      uids: this.#mode.perSession ? SandboxUids : undefined,
    }));
  }

  /** Runs a kill as the housekeeper; a container that is gone has nothing left to kill. */
  async #killIn(containerId: string, select: () => Promise<KillSelection>): Promise<number> {
    try {
      return await killProcesses(this.#docker, containerId, await select(), this.#mode.housekeeper);
    } catch (error) {
      if (isGone(error) || error instanceof ContainerLost) return 0;
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
