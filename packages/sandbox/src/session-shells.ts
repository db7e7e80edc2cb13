import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { isConnectionError, statusOf } from "./docker-errors.js";
import { KeyedLock } from "./keyed-lock.js";
import { execOnce, killMarked, randomHex } from "./one-shot-exec.js";
import { sessionHash } from "./session-hash.js";
import { SessionShell } from "./session-shell.js";
import { oneShotCommand, SessionMarker } from "./shell-scripts.js";
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

/**
 * The session shells of one sandbox, keyed by (slot, session). Calls of one session run
 * one at a time; sessions run in parallel, each in its own shell.
 */
export class SessionShells {
  readonly #docker: Docker;
  readonly #onWarning: ((message: string, cause?: unknown) => void) | undefined;
  readonly #entries = new Map<string, Entry>();
  readonly #locks = new KeyedLock();

  constructor(docker: Docker, onWarning?: (message: string, cause?: unknown) => void) {
    this.#docker = docker;
    this.#onWarning = onWarning;
  }

  /** Serialises `fn` with the session's other calls in `slot`. */
  queue<T>(slot: string, sessionKey: string, fn: () => Promise<T>): Promise<T> {
    return this.#locks.run(`${slot}\0${sessionKey}`, fn);
  }

  /**
   * Runs a command in the session's shell in `containerId`, opening (or reopening) the
   * shell as needed; falls back to a one-shot exec with the same state when it cannot be
   * opened. A vanished container or unreachable daemon propagates to the caller.
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
    if (entry === undefined) {
      try {
        const shell = await SessionShell.open(this.#docker, containerId, hash);
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
    return execOnce(this.#docker, containerId, ["sh", "-c", oneShotCommand(spec)], {
      ...rest,
      env: { [SessionMarker]: hash },
    });
  }

  /**
   * Closes the session's shells and kills every process marked with its hash in the given
   * containers (plus those its shells ran in). Returns how many processes were killed.
   */
  async kill(sessionKey: string, containers: Iterable<string>): Promise<number> {
    const targets = new Set(containers);
    for (const [key, entry] of this.#entries) {
      if (entry.sessionKey !== sessionKey) continue;
      targets.add(entry.shell.containerId);
      this.#drop(key, entry);
    }
    const marker = `${SessionMarker}=${sessionHash(sessionKey)}`;
    let killed = 0;
    for (const id of targets) {
      killed += await killMarked(this.#docker, id, marker).catch((error: unknown) => {
        if (isGone(error)) return 0;
        throw error;
      });
    }
    return killed;
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
