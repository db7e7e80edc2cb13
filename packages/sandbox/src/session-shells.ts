import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { isConnectionError, statusOf } from "./docker-errors.js";
import { ContainerLostError } from "./errors.js";
import { type ExecUser, SandboxUids, SessionHome, type UserMode } from "./exec-user.js";
import { KeyedLock } from "./keyed-lock.js";
import { exactEntry, type KillSelection } from "./kill-script.js";
import { execOnce, killProcesses } from "./one-shot-exec.js";
import type { PreparedSession } from "./prepared-session.js";
import { randomHex } from "./random-hex.js";
import { sessionHash } from "./session-hash.js";
import { SessionShell } from "./session-shell.js";
import type { SessionUsers } from "./session-users.js";
import { registryOnHost } from "./shell-channel.js";
import {
  CommandMarker,
  commandEndMarker,
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
  /** When its last command ended (the sandbox's clock). */
  usedAtMs: number;
  idle?: NodeJS.Timeout;
}

/**
 * The shells of one container, across every sandbox of this process (a shared slot's
 * container serves several profiles, and its pids limit counts all their shells).
 */
interface ContainerShells {
  readonly open: Set<Entry>;
  /** Shells being opened: room reserved for them. */
  opening: number;
  /** Shells closed to make room whose exec the engine has not reported ended yet. */
  readonly exiting: Set<Promise<void>>;
}

const containers = new Map<string, ContainerShells>();

function shellsIn(containerId: string): ContainerShells {
  let shells = containers.get(containerId);
  if (shells === undefined) {
    shells = { open: new Set(), opening: 0, exiting: new Set() };
    containers.set(containerId, shells);
  }
  return shells;
}

/** Forgets a container's record once it holds no shell. */
function settle(containerId: string): void {
  const shells = containers.get(containerId);
  if (shells !== undefined && shells.open.size + shells.opening + shells.exiting.size === 0) {
    containers.delete(containerId);
  }
}

/**
 * The host's view of each container's registry (`registryOnHost`), asked once per container;
 * the oldest forgotten past `Defaults.sessionUserCacheEntries` (the engine gives a new
 * container a new id, so an entry never goes stale, it only stops being asked for).
 */
const registries = new Map<string, Promise<string | undefined>>();

/** Any process a session or a one-shot exec started (root mode: found by its marker). */
const AnySessionMarker = `^(${SessionMarker}|${CommandMarker}|${ExecMarker})=`;

/** Options of {@link SessionShells}. */
export interface SessionShellsOptions {
  readonly mode: UserMode;
  /** Most shells open at once in one container (`SandboxSettings.maxOpenShells`). */
  readonly maxOpenShells: number;
  /** The sessions' uids (per-session mode), shared with the rest of the sandbox. */
  readonly users: SessionUsers;
  /** The sandbox's clock: how recently a shell was used. */
  readonly now: () => number;
  /** `SandboxSettings.shellChannel`; default `auto`. */
  readonly channel?: "auto" | "exec" | undefined;
  readonly onWarning?: ((message: string, cause?: unknown) => void) | undefined;
}

/**
 * The session shells of one sandbox, keyed by (slot, session). Calls of one session run
 * one at a time; sessions run in parallel, each in its own shell. In per-session mode each
 * session runs as its own uid in each container (claimed when its first shell there opens,
 * then remembered).
 *
 * Every open shell is a process in its container, counted against the container's pids
 * limit, so at most `maxOpenShells` are open per container (counting every sandbox of this
 * process that uses it): opening one more first closes the least recently used idle shell
 * of that container, without waiting for its exec to end (unless `Defaults.maxExitingShells`
 * of the container's are still ending). A shell used within `Defaults.shellKeepMs` is not
 * closed for another session's: when every open shell of the container is busy or that
 * recent, the call runs as a one-shot exec with the session's state instead, so more
 * sessions than the cap taking turns do not close each other's shells in turn. A closed
 * session keeps its cwd and exports (they live in its state file) and gets a new shell on
 * its next call.
 */
export class SessionShells {
  readonly #docker: Docker;
  readonly #mode: UserMode;
  readonly #maxOpen: number;
  readonly #users: SessionUsers;
  readonly #now: () => number;
  readonly #channel: boolean;
  readonly #onWarning: ((message: string, cause?: unknown) => void) | undefined;
  readonly #entries = new Map<string, Entry>();
  /** Warm containers' shells made ahead, by container, for the first session to run there. */
  readonly #prepared = new Map<
    string,
    { readonly slot: string; readonly ahead: PreparedSession }
  >();
  readonly #locks = new KeyedLock();

  constructor(docker: Docker, options: SessionShellsOptions) {
    this.#docker = docker;
    this.#mode = options.mode;
    this.#maxOpen = options.maxOpenShells;
    this.#users = options.users;
    this.#now = options.now;
    this.#channel = options.mode.perSession && options.channel !== "exec";
    this.#onWarning = options.onWarning;
  }

  /**
   * Where this sandbox's shells in `containerId` find their channel's FIFOs on the host
   * (`shell-channel.ts`); `undefined` when they keep the exec's stream: root mode,
   * `shellChannel: exec`, or a registry the gateway cannot reach.
   */
  async registryOf(containerId: string): Promise<string | undefined> {
    if (!this.#channel) return undefined;
    let found = registries.get(containerId);
    if (found === undefined) {
      found = registryOnHost(this.#docker, containerId);
      registries.set(containerId, found);
      if (registries.size > Defaults.sessionUserCacheEntries) {
        registries.delete(registries.keys().next().value as string);
      }
      // A failed look (the container going away) is not remembered.
      found.catch(() => registries.delete(containerId));
    }
    return found.catch(() => undefined);
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
    // A warm call goes straight to its shell: the session's hash (a SHA-256) is for opening.
    if (entry !== undefined) return this.#runIn(key, entry, command, opts);
    const hash = sessionHash(sessionKey);
    let user: ExecUser | undefined;
    entry = await this.#openPrepared(key, { slot, sessionKey, containerId, hash });
    if (entry === undefined) {
      if (this.#mode.perSession) user = await this.#users.claim(containerId, hash);
      entry = await this.#open(key, { slot, sessionKey, containerId, hash, user });
    }
    if (entry !== undefined) return this.#runIn(key, entry, command, opts);
    const spec = {
      command,
      sessionHash: hash,
      commandId: randomHex(8),
      cwd: opts.cwd,
      env: opts.env,
    };
    const { cwd: _cwd, env: _env, ...rest } = opts;
    const umask = user === undefined ? undefined : SessionUmask;
    const end = commandEndMarker();
    return execOnce(this.#docker, containerId, ["sh", "-c", oneShotCommand(spec, end, umask)], {
      ...rest,
      endMarker: end,
      env: { [SessionMarker]: hash, ...(user === undefined ? {} : SessionHome) },
      user,
      rescuer: this.#mode.housekeeper,
    });
  }

  /**
   * Gives `slot`'s container the shell a warm container made ahead ({@link PreparedSession}):
   * the first session to run a command there takes it, with its uid, instead of a claim and
   * a shell open of its own.
   */
  adopt(slot: string, ahead: PreparedSession): void {
    this.#prepared.get(ahead.containerId)?.ahead.close();
    this.#prepared.set(ahead.containerId, { slot, ahead });
  }

  /** Runs the command in the session's open shell, marked busy meanwhile. */
  async #runIn(key: string, entry: Entry, command: string, opts: ExecOptions): Promise<ExecResult> {
    clearTimeout(entry.idle);
    entry.busy = true;
    try {
      return await entry.shell.run(command, opts);
    } finally {
      entry.busy = false;
      entry.usedAtMs = this.#now();
      if (entry.shell.alive) this.#closeWhenIdle(key, entry);
      else if (this.#entries.get(key) === entry) this.#drop(key, entry);
    }
  }

  /**
   * The session's shell from the container's prepared one, if it has one still usable and it
   * binds; `undefined` otherwise (a failure is a warning: the caller opens one the usual way).
   */
  async #openPrepared(
    key: string,
    session: { slot: string; sessionKey: string; containerId: string; hash: string },
  ): Promise<Entry | undefined> {
    const { containerId } = session;
    const prepared = this.#prepared.get(containerId);
    if (prepared === undefined) return undefined;
    this.#prepared.delete(containerId);
    // A session whose uid was claimed there before its first command (a file read back for
    // it) keeps that uid: the uid made ahead is left to its placeholder.
    if (!prepared.ahead.usable || this.#users.knows(containerId, session.hash)) {
      prepared.ahead.close();
      return undefined;
    }
    if (!(await this.#makeRoom(containerId))) {
      prepared.ahead.close();
      return undefined;
    }
    const shells = shellsIn(containerId);
    try {
      const shell = await prepared.ahead.bind(session.hash, this.#users);
      const entry: Entry = {
        slot: session.slot,
        sessionKey: session.sessionKey,
        shell,
        busy: true,
        usedAtMs: this.#now(),
      };
      this.#entries.set(key, entry);
      shells.open.add(entry);
      return entry;
    } catch (error) {
      this.#onWarning?.("the warm container's shell could not be handed over", error);
      return undefined;
    } finally {
      shells.opening--;
      settle(containerId);
    }
  }

  /**
   * Opens the session's shell once the container has room for it; `undefined` when it has
   * none (every open shell busy or recently used) or the shell could not be opened (the
   * caller then runs a one-shot exec). A vanished container or unreachable daemon propagates.
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
    const shells = shellsIn(containerId);
    try {
      const registry = await this.registryOf(containerId);
      const shell = await SessionShell.open(
        this.#docker,
        containerId,
        session.hash,
        session.user,
        registry,
      );
      const entry: Entry = {
        slot: session.slot,
        sessionKey: session.sessionKey,
        shell,
        busy: true, // the caller runs its command in it next: never closed to make room
        usedAtMs: this.#now(),
      };
      this.#entries.set(key, entry);
      shells.open.add(entry);
      return entry;
    } catch (error) {
      if (isGone(error) || isConnectionError(error)) throw error;
      this.#onWarning?.("session shell unavailable, using one-shot exec", error);
      return undefined;
    } finally {
      shells.opening--;
      settle(containerId);
    }
  }

  /**
   * Reserves room for one more shell in the container (counted as opening), first closing
   * the least recently used idle shell of this sandbox there while the container is at
   * `maxOpenShells`. Waits only while `Defaults.maxExitingShells` closed ones are still
   * ending. False when no shell may be closed: each is busy or was used within
   * `Defaults.shellKeepMs`.
   */
  async #makeRoom(containerId: string): Promise<boolean> {
    for (;;) {
      for (const [key, entry] of [...this.#entries]) {
        if (entry.shell.containerId !== containerId) continue;
        if (!entry.shell.alive && !entry.busy) this.#drop(key, entry); // its controller exited
      }
      const shells = shellsIn(containerId);
      if (shells.open.size + shells.opening < this.#maxOpen) {
        if (shells.exiting.size < Defaults.maxExitingShells) {
          shells.opening++;
          return true;
        }
        await Promise.race(shells.exiting);
        continue;
      }
      const idlest = this.#idlest(containerId);
      if (idlest === undefined || this.#now() - idlest[1].usedAtMs < Defaults.shellKeepMs) {
        settle(containerId);
        return false;
      }
      this.#evict(...idlest);
    }
  }

  /** This sandbox's idle shell in the container whose last command ended first. */
  #idlest(containerId: string): [string, Entry] | undefined {
    let idlest: [string, Entry] | undefined;
    for (const [key, entry] of this.#entries) {
      if (entry.shell.containerId !== containerId || entry.busy) continue;
      if (idlest === undefined || entry.usedAtMs < idlest[1].usedAtMs) idlest = [key, entry];
    }
    return idlest;
  }

  /** Closes a shell to make room; it counts as exiting until the engine reports its end. */
  #evict(key: string, entry: Entry): void {
    clearTimeout(entry.idle);
    this.#entries.delete(key);
    const { containerId } = entry.shell;
    const shells = shellsIn(containerId);
    shells.open.delete(entry);
    const exited: Promise<void> = entry.shell.closeAndWait(Defaults.killGraceMs).finally(() => {
      shells.exiting.delete(exited);
      settle(containerId);
    });
    shells.exiting.add(exited);
  }

  /**
   * Closes the session's shells and kills every process of the session in the given
   * containers (plus those its shells ran in): in per-session mode every process of its
   * uid (looked up, never claimed), first by `killUid` (all at once, as the uid itself), then
   * by root, so a fork loop at the uid's process limit cannot stop it; and every process
   * marked with its hash (root mode, and processes left from before per-session users).
   * Returns how many processes were killed.
   */
  async kill(
    sessionKey: string,
    containers: Iterable<string>,
    killUid: (containerId: string, user: ExecUser) => Promise<number>,
  ): Promise<number> {
    const targets = new Set(containers);
    const mine = [...this.#entries].filter(([, entry]) => entry.sessionKey === sessionKey);
    for (const [, entry] of mine) targets.add(entry.shell.containerId);
    const hash = sessionHash(sessionKey);
    let killed = 0;
    try {
      for (const id of targets) {
        let user: ExecUser | undefined;
        killed += await this.#killIn(async () => {
          user = this.#mode.perSession ? await this.#users.lookUp(id, hash) : undefined;
          if (user === undefined) return 0;
          try {
            return await killUid(id, user);
          } catch (error) {
            if (isGone(error) || error instanceof ContainerLostError) throw error;
            // The kill container could not run (the engine's disk full, its memory or its
            // pids used up): the stop-and-rescan kill below, an exec in the session's own
            // container, still runs, as before the kill as the uid existed.
            this.#onWarning?.(
              "could not kill the session's processes at once; stopping them one by one",
              error,
            );
            return 0;
          }
        });
        killed += await this.#killIn(async () =>
          killProcesses(
            this.#docker,
            id,
            {
              environ: exactEntry(SessionMarker, hash),
              uids: user === undefined ? undefined : { min: user.uid, max: user.uid },
            },
            this.#mode.housekeeper,
          ),
        );
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

  /** Runs a kill in a container; one that is gone has nothing left to kill. */
  async #killIn(kill: () => Promise<number>): Promise<number> {
    try {
      return await kill();
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
    const { containerId } = entry.shell;
    containers.get(containerId)?.open.delete(entry);
    settle(containerId);
  }

  /** Closes the prepared shells of the containers `keep` says no to. */
  #closePrepared(keep: (containerId: string, slot: string) => boolean): void {
    for (const [containerId, { slot, ahead }] of [...this.#prepared]) {
      if (keep(containerId, slot)) continue;
      this.#prepared.delete(containerId);
      ahead.close();
    }
  }

  /** Closes the shells open in one container (it went away). */
  closeContainer(containerId: string): void {
    this.#closePrepared((id) => id !== containerId);
    for (const [key, entry] of this.#entries) {
      if (entry.shell.containerId === containerId) this.#drop(key, entry);
    }
  }

  /** Closes the shells of one slot (its container is going away or being let go). */
  closeSlot(slot: string): void {
    this.#closePrepared((_, of) => of !== slot);
    for (const [key, entry] of this.#entries) {
      if (entry.slot !== slot) continue;
      this.#drop(key, entry);
    }
  }

  closeAll(): void {
    this.#closePrepared(() => false);
    for (const [key, entry] of [...this.#entries]) this.#drop(key, entry);
  }
}
