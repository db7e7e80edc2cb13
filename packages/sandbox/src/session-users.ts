import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import type { ExecUser } from "./exec-user.js";
import { sessionUser } from "./session-user.js";

interface Known {
  readonly user: ExecUser;
  /** Claimed by this process: its state directory was prepared then. */
  readonly claimed: boolean;
}

/**
 * The sessions' uids per container, asked of each container once. A claim is never released
 * while its container lives (`ClaimScript`), so a uid found or claimed stays the session's
 * until the container goes: the sandbox forgets a container's uids when it drops the container.
 * Remembers at most `Defaults.sessionUserCacheEntries`, the least recently used forgotten first.
 */
export class SessionUsers {
  readonly #docker: Docker;
  readonly #known = new Map<string, Known>();

  constructor(docker: Docker) {
    this.#docker = docker;
  }

  /**
   * The session's uid in the container, claimed (and its state directory prepared) unless
   * this process did so before: one root `docker exec` the first time, none after.
   */
  async claim(containerId: string, sessionHash: string): Promise<ExecUser> {
    const key = keyOf(containerId, sessionHash);
    const known = this.#recall(key);
    if (known?.claimed === true) return known.user;
    const user = await sessionUser(this.#docker, containerId, sessionHash, true);
    this.#remember(key, { user, claimed: true });
    return user;
  }

  /**
   * The session's uid in the container, looked up and never claimed: `undefined` when the
   * session never ran there (that answer is not remembered: it may run there next).
   */
  async lookUp(containerId: string, sessionHash: string): Promise<ExecUser | undefined> {
    const key = keyOf(containerId, sessionHash);
    const known = this.#recall(key);
    if (known !== undefined) return known.user;
    const user = await sessionUser(this.#docker, containerId, sessionHash, false);
    if (user !== undefined) this.#remember(key, { user, claimed: false });
    return user;
  }

  /** Whether this process claimed or found the session's uid in the container already. */
  knows(containerId: string, sessionHash: string): boolean {
    return this.#known.has(keyOf(containerId, sessionHash));
  }

  /**
   * Records that the uid claimed in the container for `from` (a warm container's placeholder)
   * was handed to `to` (`PreparedSession`): `to`'s from now on, as if claimed for it.
   */
  handedOver(containerId: string, from: string, to: string, user: ExecUser): void {
    this.#known.delete(keyOf(containerId, from));
    this.#remember(keyOf(containerId, to), { user, claimed: true });
  }

  /** Forgets the uids of a container that went away or was let go. */
  forget(containerId: string): void {
    const prefix = keyOf(containerId, "");
    for (const key of [...this.#known.keys()]) {
      if (key.startsWith(prefix)) this.#known.delete(key);
    }
  }

  #recall(key: string): Known | undefined {
    const known = this.#known.get(key);
    if (known !== undefined) {
      this.#known.delete(key);
      this.#known.set(key, known);
    }
    return known;
  }

  #remember(key: string, known: Known): void {
    this.#known.delete(key);
    this.#known.set(key, known);
    if (this.#known.size > Defaults.sessionUserCacheEntries) {
      const oldest = this.#known.keys().next().value;
      if (oldest !== undefined) this.#known.delete(oldest);
    }
  }
}

function keyOf(containerId: string, sessionHash: string): string {
  return `${containerId}\0${sessionHash}`;
}
