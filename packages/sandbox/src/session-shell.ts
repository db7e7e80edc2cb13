import type { Duplex } from "node:stream";
import { deadline, settledWithin } from "@mediagate/io";
import type Docker from "dockerode";
import { throwIfLost } from "./container-loss.js";
import { Defaults } from "./defaults.js";
import { type ExecUser, RootUser, SessionHome } from "./exec-user.js";
import { FrameDecoder, StreamType, streamEnded } from "./frames.js";
import { exactEntry } from "./kill-script.js";
import { execOnce, exitCodeOf, killProcesses, startAttachedExec } from "./one-shot-exec.js";
import { MarkerScanner, OutputBuffer } from "./output.js";
import { randomHex } from "./random-hex.js";
import { type Channel, channelFifos, openChannel } from "./shell-channel.js";
import {
  type ChannelFifos,
  CommandMarker,
  type CommandSpec,
  CommandsAsScripts,
  channelDrop,
  channelSwitch,
  commandEndMarker,
  controllerBind,
  controllerCommand,
  controllerInit,
  controllerReady,
  SessionMarker,
  SessionUmask,
} from "./shell-scripts.js";
import type { ExecOptions, ExecResult } from "./types.js";

interface Running {
  readonly out: MarkerScanner;
  readonly err: MarkerScanner;
  readonly settle: () => void;
}

/**
 * One chat session's persistent shell inside its slot's container: a `docker exec` of
 * `sh` with stdin attached (the "controller"). Each command runs in a forked subshell of
 * the controller that restores the session's cwd and exports from a state file and saves
 * them back on exit, so `cd`/`export`/`unset` persist while the controller stays clean and
 * never runs user code itself; a warm call costs one fork instead of a `docker exec`.
 * Non-exported variables, functions and aliases do not carry over between calls.
 *
 * With a session `user` (per-session mode) the controller, and so every command, runs as
 * that uid with `HOME=/root` and umask 002; without one, as the image's user.
 *
 * Given the host's view of the container's registry (`registry`, per-session mode only), the
 * controller moves its stdin, stdout and stderr to FIFOs there once set up
 * (`shell-channel.ts`): commands and output then bypass the engine, and the exec's stream only
 * tells when the controller ended. Where the FIFOs cannot be made or opened, it keeps the
 * exec's stream.
 *
 * Timeout/abort kills the command's processes (the controller's children, their
 * descendants and everything marked with the command's id) and keeps the shell. Commands
 * must be serialised by the caller; {@link SessionShell.run} assumes one at a time.
 */
export class SessionShell {
  readonly containerId: string;
  /** The session it serves; empty while a blank shell waits for {@link bind}. */
  #sessionHash: string;
  readonly #docker: Docker;
  readonly #stream: Duplex;
  /** The controller's exec: how it ended, when a command killed it. */
  readonly #controllerExec: Docker.Exec;
  readonly #user: ExecUser | undefined;
  #controllerPid = 0;
  #alive = true;
  #running: Running | undefined;
  /** The FIFOs the controller reads and writes once moved to them; none: the exec's stream. */
  #channel: Channel | undefined;

  private constructor(
    docker: Docker,
    containerId: string,
    sessionHash: string,
    exec: Docker.Exec,
    stream: Duplex,
    user: ExecUser | undefined,
  ) {
    this.#docker = docker;
    this.#controllerExec = exec;
    this.#user = user;
    this.containerId = containerId;
    this.#sessionHash = sessionHash;
    this.#stream = stream;
    const decoder = new FrameDecoder((type, payload) => this.#received(type, payload));
    stream.on("data", (chunk: Buffer) => decoder.push(chunk));
    stream.once("end", this.#died);
    stream.once("close", this.#died);
    stream.on("error", this.#died);
  }

  /** The controller ended (its exec's stream, or one of its FIFOs, failed or ended). */
  readonly #died = (): void => {
    this.#alive = false;
    // On the channel, what the controller wrote before it ended is in the FIFOs already (the
    // engine reports the end long after): read it first, then settle.
    if (this.#channel === undefined) this.#running?.settle();
    else setImmediate(() => this.#running?.settle());
  };

  /** Output of the controller: `type` is the stream it came on (`StreamType`). */
  #received(type: number, payload: Buffer): void {
    const running = this.#running;
    if (running === undefined) return;
    (type === StreamType.stderr ? running.err : running.out).push(payload);
    if (running.out.done && running.err.done) running.settle();
  }

  /** Sends the controller a script: on its channel once it has one, else on the exec's stream. */
  #write(script: string): void {
    (this.#channel?.input ?? this.#stream).write(script);
  }

  /** Starts the controller and waits until it reports ready (bounded). */
  static async open(
    docker: Docker,
    containerId: string,
    sessionHash: string,
    user?: ExecUser,
    registry?: string,
  ): Promise<SessionShell> {
    const shell = await SessionShell.#exec(docker, containerId, sessionHash, user);
    const channel = registry === undefined ? undefined : { registry, dir: sessionHash };
    await shell.#bounded(shell.#start(sessionHash, "open", channel));
    return shell;
  }

  /**
   * Starts a controller that serves no session yet and has set nothing up (a warm
   * container's, docs/sandbox.md "Warm pool"): it runs nothing until {@link bind} names its
   * session. Its process carries no session marker, so a kill aimed at sessions' processes by
   * marker (`/stop all` in root mode) does not count it; the commands it runs once bound carry
   * their session's, as every command does. With `channel` (per-session mode: the registry's
   * host path and the placeholder session whose state directory the uid owns already), it
   * moves to its FIFOs now, so that binding it costs nothing more: the names are gone once
   * open, and the directory's rename to the session's leaves the open FIFOs as they are.
   */
  static async openBlank(
    docker: Docker,
    containerId: string,
    user?: ExecUser,
    channel?: { readonly registry: string; readonly dir: string },
  ): Promise<SessionShell> {
    const shell = await SessionShell.#exec(docker, containerId, "", user);
    await shell.#bounded(shell.#start(undefined, "open", channel));
    return shell;
  }

  /**
   * Makes a blank shell ({@link openBlank}) the session's: the same set-up {@link open} does
   * (umask, the session's state file, the controller's environment emptied). In per-session
   * mode the session's state directory must be the shell's uid's already.
   */
  async bind(sessionHash: string): Promise<void> {
    if (this.#sessionHash !== "") throw new Error("the session shell serves a session already");
    await this.#bounded(this.#start(sessionHash, "bind"));
    this.#sessionHash = sessionHash;
  }

  static async #exec(
    docker: Docker,
    containerId: string,
    sessionHash: string,
    user: ExecUser | undefined,
  ): Promise<SessionShell> {
    const home = user === undefined ? [] : [`HOME=${SessionHome.HOME}`];
    const marker = sessionHash === "" ? [] : [`${SessionMarker}=${sessionHash}`];
    const { exec, stream } = await startAttachedExec(docker, containerId, ["sh"], {
      env: [...marker, ...home],
      user,
    });
    return new SessionShell(docker, containerId, sessionHash, exec, stream, user);
  }

  /** Awaits a start-up step within `Defaults.shellOpenTimeoutMs`; the shell is closed if not. */
  async #bounded(step: Promise<void>): Promise<void> {
    try {
      await deadline(step, {
        timeoutMs: Defaults.shellOpenTimeoutMs,
        what: "opening the session shell",
      });
    } catch (error) {
      this.close();
      throw error;
    }
  }

  /** The session it serves (empty for a blank shell not bound yet). */
  get sessionHash(): string {
    return this.#sessionHash;
  }

  get alive(): boolean {
    return this.#alive;
  }

  /** The controller's pid inside the container. */
  get controllerPid(): number {
    return this.#controllerPid;
  }

  /**
   * Sends the controller its set-up for `sessionHash` (none: only the ready line); `bind` for
   * a blank controller, which has its first line ({@link controllerReady}) already. With
   * `channel` (per-session mode: the host's view of the registry, and the session whose state
   * directory holds the FIFOs), the set-up makes the channel's FIFOs and the controller then
   * moves to them ({@link #moveToChannel}).
   */
  async #start(
    sessionHash: string | undefined,
    how: "open" | "bind" = "open",
    channel?: { readonly registry: string; readonly dir: string },
  ): Promise<void> {
    const user = this.#user;
    // The channel needs a uid of the session's own (shell-channel.ts).
    const move =
      channel === undefined || user === undefined
        ? undefined
        : {
            registry: channel.registry,
            fifos: channelFifos(channel.dir, randomHex(6)),
            uid: user.uid,
          };
    const fifos = move?.fifos;
    const umask = user === undefined ? undefined : SessionUmask;
    const out = await this.#ask(
      sessionHash === undefined
        ? (ready) => controllerReady(ready, fifos)
        : how === "open"
          ? (ready) => controllerInit(sessionHash, ready, umask, fifos)
          : user === undefined
            ? (ready) => `${CommandsAsScripts}\n${controllerBind(sessionHash, ready, umask)}`
            : (ready) => controllerBind(sessionHash, ready, umask, fifos),
      "stdout",
    );
    const pid = Number.parseInt(out?.trim() ?? "", 10);
    if (!this.#alive || Number.isNaN(pid)) throw new Error("the session shell did not start");
    this.#controllerPid = pid;
    if (move !== undefined) await this.#moveToChannel(move.registry, move.fifos, move.uid);
  }

  /**
   * Sends the controller the script `scriptFor(ready)` (with `send`, else as commands go) and
   * waits for its `ready` line on stdout (and on stderr too with `on: "both"`); answers the rest
   * of the stdout line.
   */
  async #ask(
    scriptFor: (ready: string) => string,
    on: "stdout" | "both",
    send: (script: string) => void = (script) => this.#write(script),
  ): Promise<string | undefined> {
    const ready = `__mediagate_ready_${randomHex(8)}__`;
    const out = new MarkerScanner(ready, () => {});
    const err = new MarkerScanner(ready, () => {});
    if (on === "stdout") err.trailer = "";
    await new Promise<void>((resolve) => {
      this.#running = { out, err, settle: resolve };
      send(scriptFor(ready));
    });
    this.#running = undefined;
    return out.trailer;
  }

  /**
   * Opens the channel's FIFOs on the host and moves the controller to them; when they cannot
   * be opened (not made, or not the session's FIFOs), removes them and keeps the exec's stream.
   */
  async #moveToChannel(registry: string, fifos: ChannelFifos, uid: number): Promise<void> {
    let channel: Channel;
    try {
      channel = await openChannel(registry, fifos, uid);
    } catch {
      this.#stream.write(channelDrop(fifos));
      return;
    }
    const { output, errors } = channel;
    output.on("data", (chunk: Buffer) => this.#received(StreamType.stdout, chunk));
    errors.on("data", (chunk: Buffer) => this.#received(StreamType.stderr, chunk));
    for (const end of [channel.input, output, errors]) end.on("error", this.#died);
    // Every writer gone (the controller and its jobs): nothing more can come.
    for (const read of [output, errors]) read.on("end", () => read.destroy());
    this.#channel = channel;
    // Sent on the exec's stream, which the controller reads until the switch; it answers on
    // its FIFOs.
    await this.#ask(
      (ready) => channelSwitch(fifos, ready),
      "both",
      (script) => this.#stream.write(script),
    );
    if (!this.#alive) throw new Error("the session shell did not start");
    channel.release();
  }

  /**
   * Runs one command; the shell must be alive and idle. Throws `ContainerLostError` when the
   * container or the engine went away before the command reported its exit code.
   */
  async run(command: string, options: ExecOptions = {}): Promise<ExecResult> {
    if (this.#sessionHash === "") throw new Error("the session shell serves no session yet");
    const started = performance.now();
    const cap = options.maxOutputBytes ?? Defaults.maxOutputBytes;
    const listener = options.onOutput;
    const stdout = new OutputBuffer(cap, listener && ((chunk) => listener(chunk, "stdout")));
    const stderr = new OutputBuffer(cap, listener && ((chunk) => listener(chunk, "stderr")));
    const end = commandEndMarker();
    const spec: CommandSpec = {
      command,
      sessionHash: this.sessionHash,
      commandId: randomHex(8),
      cwd: options.cwd,
      env: options.env,
    };
    let stopReason: "timeout" | "abort" | undefined;
    const finished = new Promise<void>((resolve) => {
      const running: Running = {
        out: new MarkerScanner(end, (chunk) => stdout.push(chunk)),
        err: new MarkerScanner(end, (chunk) => stderr.push(chunk)),
        settle: resolve,
      };
      this.#running = running;
    });
    const running = this.#running;
    const timeoutMs = options.timeoutMs ?? Defaults.execTimeoutMs;
    try {
      const sent = options.signal?.aborted !== true;
      if (sent) this.#write(controllerCommand(spec, end));
      try {
        await deadline(finished, { timeoutMs, what: "session command", signal: options.signal });
      } catch {
        // The caller's signal decides: its reason may be a DeadlineError of its own (a turn's).
        const reason = options.signal?.aborted ? "abort" : "timeout";
        if (!sent || running === undefined) stopReason = reason;
        else if (await this.#stop(running, finished, spec.commandId)) stopReason = reason;
      }
    } finally {
      this.#running = undefined;
    }
    running?.out.flush();
    running?.err.flush();
    let code = Number.parseInt(running?.out.trailer ?? "", 10);
    // The controller's stream ended before the command reported: either the session's own
    // processes killed the controller (`kill -9 $$`, `kill 0`: the command ends with the
    // shell's status, 128 + the signal, and the shell reopens next call) or the container or
    // engine went away under it.
    if (Number.isNaN(code) && stopReason === undefined && !this.#alive) {
      await throwIfLost(this.#docker, this.containerId);
      code = await exitCodeOf(this.#controllerExec);
    }
    return {
      exitCode: Number.isNaN(code) ? -1 : code,
      stdout: stdout.text(),
      stderr: stderr.text(),
      truncated: stdout.truncated || stderr.truncated,
      timedOut: stopReason === "timeout",
      aborted: stopReason === "abort",
      durationMs: performance.now() - started,
    };
  }

  /**
   * Stops a command whose time ran out (or whose caller aborted); true when it was stopped,
   * false when it had ended by itself as the time ran out: its exit status had come, or it
   * came after a kill that found nothing of the command left. Such a command is reported as
   * it ended. A command that does not report after its kill breaks the shell down.
   */
  async #stop(running: Running, finished: Promise<void>, commandId: string): Promise<boolean> {
    if (running.out.done) {
      await settledWithin(finished, Defaults.killGraceMs);
      return false;
    }
    const killed = await this.#kill(commandId);
    await settledWithin(finished, Defaults.killGraceMs);
    if (running.out.done && running.err.done) return killed > 0;
    await this.#breakDown();
    return true;
  }

  /**
   * Kills one command's processes, keeping the controller: its children (and theirs) and
   * everything marked with the command's id. The marker scan reads environments, which only
   * the session's own uid may do, so it runs as that uid; when that exec fails (the uid is
   * at its process limit and cannot fork) root kills the controller's process tree by the
   * world-readable `/proc/<pid>/stat`, then the marker scan is tried once more. Returns how
   * many processes were killed, a kill that failed counting as one.
   */
  async #kill(commandId: string): Promise<number> {
    const marked = { environ: exactEntry(CommandMarker, commandId) };
    const tree = { childrenOf: this.#controllerPid };
    try {
      return await killProcesses(
        this.#docker,
        this.containerId,
        { ...marked, ...tree },
        this.#user,
      );
    } catch {
      if (this.#user === undefined) return 1;
    }
    const byTree = await killProcesses(this.#docker, this.containerId, tree, RootUser).catch(
      () => 1,
    );
    const byMarker = await killProcesses(this.#docker, this.containerId, marked, this.#user).catch(
      () => 1,
    );
    return byTree + byMarker;
  }

  /** A command did not come back after its kill: give up on this shell. */
  async #breakDown(): Promise<void> {
    this.#alive = false;
    if (this.#controllerPid > 0) {
      const argv = ["kill", "-9", String(this.#controllerPid)];
      const user = this.#user === undefined ? undefined : RootUser;
      await execOnce(this.#docker, this.containerId, argv, { killOnStop: false, user }).catch(
        () => undefined,
      );
    }
    this.close();
  }

  /**
   * Closes the controller's stdin and waits (at most `timeoutMs`) until the engine reports
   * the exec ended, so the controller's process is gone from the container when this
   * resolves; then closes the connection.
   */
  async closeAndWait(timeoutMs: number): Promise<void> {
    this.#alive = false;
    this.#closeChannel();
    if (!this.#stream.destroyed) {
      const ended = streamEnded(this.#stream);
      this.#stream.end();
      await settledWithin(ended, timeoutMs);
    }
    this.#stream.destroy();
  }

  /** Closes the controller's stdin and the connection; the controller exits on EOF. */
  close(): void {
    this.#alive = false;
    this.#closeChannel();
    this.#stream.end();
    this.#stream.destroy();
  }

  /**
   * Closes the gateway's end of the controller's stdin, which had no other writer: the
   * controller reads its end and exits. Its output and errors are read on (and dropped) until
   * nothing writes to them any more, so a job it left running does not die of SIGPIPE
   * (`Channel`).
   */
  #closeChannel(): void {
    const channel = this.#channel;
    if (channel === undefined) return;
    channel.input.destroy();
    channel.release();
  }
}
