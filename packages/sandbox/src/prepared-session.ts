import type { Duplex } from "node:stream";
import { deadline } from "@mediagate/io";
import type Docker from "dockerode";
import { Defaults } from "./defaults.js";
import { type ExecUser, RootUser, type UserMode } from "./exec-user.js";
import { readFrames, StreamType } from "./frames.js";
import { startAttached } from "./one-shot-exec.js";
import { randomHex } from "./random-hex.js";
import { SessionShell } from "./session-shell.js";
import type { SessionUsers } from "./session-users.js";
import { RegistryDir, StateDir } from "./shell-scripts.js";

/**
 * Run as root, started ahead and waiting on stdin for the session's hash: hands the uid a warm
 * container claimed for a placeholder (`$1`, its uid `$2`) to that session. Its state directory
 * `s/<placeholder>/` is renamed `s/<hash>/` and the registry's `uid/<n>` link made to name the
 * session, and `h/<hash>` made to name the uid, so a claim or lookup by the session's hash (a
 * kill, another process) starts its walk there and finds it (`ClaimScript`). Refuses a
 * hash that is not lowercase hex, a uid the placeholder does not hold, and a session that has a
 * state directory there already. Prints the uid.
 */
export const HandOverScript = `p=$1; u=$2
R=${RegistryDir}; S=${StateDir}
IFS= read -r h || { echo "no session hash on stdin" >&2; exit 3; }
case $h in ''|*[!0-9a-f]*) echo "not a session hash" >&2; exit 3;; esac
[ "$(readlink "$R/uid/$u")" = "$p" ] || { echo "uid $u is not the placeholder's" >&2; exit 3; }
[ -e "$S/$h" ] && { echo "the session has a state directory already" >&2; exit 3; }
[ -L "$S/$p" ] && { echo "$S/$p is a link" >&2; exit 3; }
umask 077
[ -L "$R/h" ] && { echo "$R/h is a link" >&2; exit 3; }
[ -d "$R/h" ] || mkdir "$R/h" || exit 3
ln -sfn "$u" "$R/h/$h" || exit 3
mv "$S/$p" "$S/$h" || exit 3
ln -sfn "$h" "$R/uid/$u" || exit 3
echo "$u"
`;

/** A root `docker exec` of {@link HandOverScript}, started and waiting for the hash. */
class HandOver {
  readonly #stream: Duplex;
  readonly #ended: Promise<void>;
  #stdout = "";
  #stderr = "";

  private constructor(stream: Duplex) {
    this.#stream = stream;
    this.#ended = readFrames(stream, (type, payload) => {
      if (type === StreamType.stderr) this.#stderr += payload.toString("utf8");
      else this.#stdout += payload.toString("utf8");
    });
  }

  static async start(
    docker: Docker,
    containerId: string,
    placeholder: string,
    uid: number,
  ): Promise<HandOver> {
    const argv = ["sh", "-c", HandOverScript, "mediagate-hand-over", placeholder, String(uid)];
    return new HandOver(await startAttached(docker, containerId, argv, { user: RootUser }));
  }

  /** Whether the exec still waits (its connection is open). */
  get waiting(): boolean {
    return !this.#stream.destroyed && this.#stream.writable;
  }

  /** Gives the uid to `sessionHash`; resolves once the script reported it (bounded). */
  async give(sessionHash: string, uid: number): Promise<void> {
    this.#stream.end(`${sessionHash}\n`);
    try {
      await deadline(this.#ended, {
        timeoutMs: Defaults.shellOpenTimeoutMs,
        what: "handing a warm container's uid to its session",
      });
    } finally {
      this.#stream.destroy();
    }
    if (this.#stdout.trim() !== String(uid)) {
      const said = this.#stderr.trim() || "no answer";
      throw new Error(`could not hand the warm uid to the session: ${said.slice(0, 200)}`);
    }
  }

  close(): void {
    this.#stream.destroy();
  }
}

/**
 * What a warm container (docs/sandbox.md, "Warm pool") has ready for the session that takes it,
 * so that session's first command costs no `docker exec` round trip: a shell open that has run
 * nothing, and in per-session mode a uid claimed for a placeholder (a random hash no session
 * has: the shell runs as it) with a root exec waiting to hand that uid to the session. Made
 * while the container waits in the pool; {@link bind} at the session's first command.
 */
export class PreparedSession {
  readonly containerId: string;
  readonly #placeholder: string;
  readonly #shell: SessionShell;
  readonly #user: ExecUser | undefined;
  readonly #handOver: HandOver | undefined;

  private constructor(
    containerId: string,
    placeholder: string,
    shell: SessionShell,
    user: ExecUser | undefined,
    handOver: HandOver | undefined,
  ) {
    this.containerId = containerId;
    this.#placeholder = placeholder;
    this.#shell = shell;
    this.#user = user;
    this.#handOver = handOver;
  }

  /**
   * Claims the placeholder's uid (per-session mode), opens the blank shell and the hand-over;
   * with `registry` (`SessionShells#registryOf`) the shell moves to its channel's FIFOs in the
   * placeholder's state directory now, not on the session's first command.
   */
  static async prepare(
    docker: Docker,
    containerId: string,
    mode: UserMode,
    users: SessionUsers,
    registry: string | undefined,
  ): Promise<PreparedSession> {
    const placeholder = randomHex(32);
    if (!mode.perSession) {
      const shell = await SessionShell.openBlank(docker, containerId);
      return new PreparedSession(containerId, placeholder, shell, undefined, undefined);
    }
    const user = await users.claim(containerId, placeholder);
    const handOver = await HandOver.start(docker, containerId, placeholder, user.uid);
    try {
      const channel = registry === undefined ? undefined : { registry, dir: placeholder };
      const shell = await SessionShell.openBlank(docker, containerId, user, channel);
      return new PreparedSession(containerId, placeholder, shell, user, handOver);
    } catch (error) {
      handOver.close();
      throw error;
    }
  }

  /** Whether both its connections are still open (an engine restart drops them). */
  get usable(): boolean {
    return this.#shell.alive && (this.#handOver?.waiting ?? true);
  }

  /**
   * Makes it the session's: the uid handed over (and remembered as the session's in `users`),
   * then the shell set up for the session. Rejects (and closes everything) when a step fails;
   * the caller then opens the session's shell the usual way.
   */
  async bind(sessionHash: string, users: SessionUsers): Promise<SessionShell> {
    try {
      if (this.#handOver !== undefined && this.#user !== undefined) {
        await this.#handOver.give(sessionHash, this.#user.uid);
        users.handedOver(this.containerId, this.#placeholder, sessionHash, this.#user);
      }
      await this.#shell.bind(sessionHash);
      return this.#shell;
    } catch (error) {
      this.close();
      throw error;
    }
  }

  close(): void {
    this.#handOver?.close();
    this.#shell.close();
  }
}
