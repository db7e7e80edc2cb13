import { constants } from "node:fs";
import { type FileHandle, mkdir, open, unlink } from "node:fs/promises";
import { join } from "node:path";
import type Docker from "dockerode";
import { boundedCall } from "./bounded-call.js";
import { Defaults } from "./defaults.js";
import { codeOf, messageOf } from "./docker-errors.js";
import { type ExecUser, SessionHome } from "./exec-user.js";
import { InboxFileError, writeAll } from "./inbox-bytes.js";
import { type InboxOwner, noFreeName } from "./inbox-host.js";
import { candidateNames } from "./inbox-name.js";
import { SpoolArchive } from "./inbox-tar.js";
import { execOnce } from "./one-shot-exec.js";
import { randomHex } from "./random-hex.js";
import { RegistryDir } from "./shell-scripts.js";

/**
 * Where the engine unpacks inbox files before they are copied into place: in the
 * `/run/mediagate` volume, which the archive API reaches (it writes beneath a plain tmpfs
 * mount, and refuses the read-only root), sized by `scratchBytes` (`createOptions`).
 */
const StageRoot = `${RegistryDir}/in`;

/** A new spool file the gateway alone reaches, unlinked as soon as it is open. */
const SpoolFlags = constants.O_RDWR | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/**
 * Run by the housekeeper (root in per-session mode): makes `StageRoot` (root-owned `0711`,
 * refusing a link, like the uid registry beside it) and in it the call's staging directory
 * `$1`, owned by the receiving user (`$2:$3`) with mode `0700`. Nobody else can list, enter or
 * rename it: the engine unpacks there, and the receiving user copies from there.
 */
export const StageScript = `d=$1; uid=$2; gid=$3
R=${RegistryDir}; I=${StageRoot}
umask 077
[ -d /run ] || mkdir -m 0755 /run || exit 3
for x in "$R" "$I"; do
  [ -L "$x" ] && { echo "$x is a link" >&2; exit 3; }
  [ -d "$x" ] || mkdir "$x" || exit 3
done
chmod 0711 "$R" "$I" || exit 3
mkdir "$I/$d" && chown "$uid:$gid" "$I/$d" && chmod 0700 "$I/$d" || exit 3
`;

/**
 * Run as the receiving user (the session's uid): copies the staged file `$1` into the inbox
 * `$2` under the hidden temp name `$3`, sets mode `$4` (the inbox is made with `$5` when
 * missing), and hard-links it to the first free name of the rest (`ln -T` never replaces, and
 * never links into a directory another session made under one of those names), then removes
 * the temp name and the staged file. The answer on stdout: `S<name>` saved, `U` the
 * inbox is a link or not a directory, `F<reason>` failed (nothing left), `X` no free name.
 * Every path is resolved with the user's own permissions: a link planted in `/workspace`
 * leads nowhere the user could not write anyway.
 */
export const MoveScript = `s=$1; d=$2; t=$3; fmode=$4; dmode=$5; shift 5
unusable() { [ -L "$d" ] || { [ -e "$d" ] && [ ! -d "$d" ]; }; }
unusable && { rm -f "$s"; printf U; exit 0; }
[ -d "$d" ] || mkdir -m "$dmode" "$d" 2>/dev/null || [ -d "$d" ] || { rm -f "$s"; printf 'Fcannot make %s' "$d"; exit 0; }
unusable && { rm -f "$s"; printf U; exit 0; }
if ! e=$(cp "$s" "$d/$t" 2>&1); then rm -f "$d/$t" "$s"; printf 'F%s' "$e"; exit 0; fi
rm -f "$s"
chmod "$fmode" "$d/$t" || { rm -f "$d/$t"; printf 'Fcannot set its mode'; exit 0; }
for n in "$@"; do
  if e=$(ln -T "$d/$t" "$d/$n" 2>&1); then rm -f "$d/$t"; printf 'S%s' "$n"; exit 0; fi
  [ -e "$d/$n" ] || [ -L "$d/$n" ] || { rm -f "$d/$t"; printf 'F%s' "$e"; exit 0; }
done
rm -f "$d/$t"; printf X
`;

/** What {@link ArchiveInbox} needs of the sandbox. */
export interface ArchiveInboxContext {
  readonly docker: Docker;
  readonly containerId: string;
  /** Who receives the files; `user` runs the copy (`undefined`: the image's user, root mode). */
  readonly owner: InboxOwner;
  readonly user: ExecUser | undefined;
  /** Who makes and removes the staging directory (root in per-session mode). */
  readonly housekeeper: ExecUser | undefined;
  /** A private host directory for spooling (the tar header needs the size first). */
  readonly spoolDir: string;
  /** Bound of each Docker call; uploads and copies get `Defaults.inboxMsPerMiB` more per MiB. */
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  /** The sentence for a full disk, naming which ceiling was hit. */
  readonly noSpace: (filename: string) => string;
  /** The sentence for a full staging area (`/run/mediagate`, sized by `scratchBytes`). */
  readonly noStagingSpace: (filename: string) => string;
}

/**
 * The inbox of a slot the host cannot write into: a tmpfs slot (the engine's archive API
 * writes beneath a tmpfs mount, invisible in the container) or any slot of a remote engine.
 * Each file is spooled on the host (a tar header needs its size; the spool is unlinked at
 * once and never held in memory), counted and hashed; only a complete file within its limit
 * goes on. The engine unpacks it (`putArchive`, a tar entry with the receiving uid, gid and
 * mode 0600, read from the spool into a few reused buffers: {@link SpoolArchive}) into a
 * staging directory in `/run/mediagate` that only that user and root can reach (a file that
 * does not fit there is refused as `no_space`); then a `docker exec` as that user copies it into
 * `/workspace/inbox` under a hidden temp name and links it to its final name
 * ({@link MoveScript}), so the agent never sees a partial file and the copy can write only
 * where the user could. Costs two execs per call and one upload plus one exec per file.
 */
export class ArchiveInbox {
  readonly #context: ArchiveInboxContext;
  readonly #stageDir: string;
  #files = 0;

  private constructor(context: ArchiveInboxContext, stageDir: string) {
    this.#context = context;
    this.#stageDir = stageDir;
  }

  static async open(context: ArchiveInboxContext): Promise<ArchiveInbox> {
    const name = randomHex(8);
    const { owner } = context;
    const made = await execOnce(
      context.docker,
      context.containerId,
      ["sh", "-c", StageScript, "mediagate-stage", name, String(owner.uid), String(owner.gid)],
      { timeoutMs: context.timeoutMs, killOnStop: false, user: context.housekeeper },
    );
    if (made.exitCode !== 0) {
      const said = made.stderr.trim() || `exit code ${made.exitCode}`;
      throw new InboxFileError("failed", `could not stage files in the container: ${said}`);
    }
    await mkdir(context.spoolDir, { recursive: true, mode: 0o700 });
    return new ArchiveInbox(context, `${StageRoot}/${name}`);
  }

  /**
   * Spools `chunks`, runs `beforeLink` (classification), uploads the file and moves it into
   * the inbox under the first free one of `name`, `name-2`, … (`candidateNames`). Answers the
   * name it got.
   */
  async write(
    chunks: AsyncIterable<Buffer>,
    name: string,
    beforeLink: () => Promise<void>,
  ): Promise<string> {
    const spoolPath = join(this.#context.spoolDir, `inbox-${randomHex(8)}`);
    const spool = await open(spoolPath, SpoolFlags, 0o600);
    try {
      await unlink(spoolPath);
      let size = 0;
      try {
        for await (const chunk of chunks) {
          await writeAll(spool, chunk);
          size += chunk.length;
        }
      } catch (error) {
        if (codeOf(error) === "ENOSPC") {
          throw new InboxFileError("no_space", `${name}: the gateway's spool disk is full`, {
            cause: error,
          });
        }
        throw error;
      }
      await beforeLink();
      const staged = `${this.#stageDir}/${++this.#files}-${randomHex(4)}`;
      await this.#upload(spool, size, staged).catch(async (error: unknown) => {
        // What the engine unpacked before it failed would take the staging space from the
        // call's next files.
        await this.#removeStaged(staged);
        if (!/no space left on device/i.test(messageOf(error))) throw error;
        throw new InboxFileError("no_space", this.#context.noStagingSpace(name), { cause: error });
      });
      return await this.#move(staged, name, size);
    } finally {
      await spool.close();
    }
  }

  /** Removes the staging directory (as the housekeeper; `rm -rf` follows no link). */
  async close(): Promise<void> {
    const { docker, containerId, housekeeper, timeoutMs } = this.#context;
    await execOnce(docker, containerId, ["rm", "-rf", "--", this.#stageDir], {
      timeoutMs,
      killOnStop: false,
      user: housekeeper,
    }).catch(() => undefined);
  }

  /** Removes one staged file (as the housekeeper), best effort: `close` removes them all. */
  async #removeStaged(staged: string): Promise<void> {
    const { docker, containerId, housekeeper, timeoutMs } = this.#context;
    await execOnce(docker, containerId, ["rm", "-f", "--", staged], {
      timeoutMs,
      killOnStop: false,
      user: housekeeper,
    }).catch(() => undefined);
  }

  async #upload(spool: FileHandle, size: number, staged: string): Promise<void> {
    const { docker, containerId, owner, signal } = this.#context;
    const archive = new SpoolArchive(spool, {
      name: staged.slice(this.#stageDir.length + 1),
      size,
      mode: 0o600,
      uid: owner.uid,
      gid: owner.gid,
      mtime: new Date(),
    });
    const bound = { timeoutMs: this.#allowance(size), signal };
    try {
      await boundedCall(
        "put archive",
        bound,
        (abortSignal) =>
          docker
            .getContainer(containerId)
            .putArchive(archive, { path: this.#stageDir, abortSignal }),
        containerId,
      );
    } finally {
      archive.destroy();
      await archive.finished(); // the spool is closed next: no read may still be running
    }
  }

  async #move(staged: string, name: string, size: number): Promise<string> {
    const { docker, containerId, owner, user, housekeeper, signal } = this.#context;
    const temp = `.mediagate-${randomHex(8)}.part`;
    const names = candidateNames(name);
    const argv = [
      "sh",
      "-c",
      MoveScript,
      "mediagate-inbox",
      staged,
      Defaults.inboxDir,
      temp,
      owner.fileMode.toString(8),
      owner.dirMode.toString(8),
      ...names,
    ];
    const result = await execOnce(docker, containerId, argv, {
      timeoutMs: this.#allowance(size),
      signal,
      user,
      ...(user === undefined ? {} : { env: SessionHome, rescuer: housekeeper }),
    });
    const answer = result.stdout;
    if (result.exitCode === 0 && answer.startsWith("S")) return answer.slice(1);
    if (result.timedOut || result.aborted || result.exitCode !== 0) {
      // Killed mid-copy: the temp name may be left; remove it as the same user.
      await execOnce(docker, containerId, ["rm", "-f", "--", `${Defaults.inboxDir}/${temp}`], {
        timeoutMs: this.#context.timeoutMs,
        killOnStop: false,
        user,
      }).catch(() => undefined);
      if (result.aborted) throw new InboxFileError("aborted", `${name}: the save was stopped`);
      if (result.timedOut)
        throw new InboxFileError("failed", `${name}: copying it into the inbox timed out`);
      const said = result.stderr.trim() || `exit code ${result.exitCode}`;
      throw new InboxFileError(
        "failed",
        `${name}: copying it into the inbox failed (${said.slice(0, 200)})`,
      );
    }
    if (answer === "U") {
      throw new InboxFileError(
        "inbox_unusable",
        "/workspace/inbox is a link or not a directory: files are only written into a real directory there (move it away)",
      );
    }
    if (answer === "X") throw new InboxFileError("failed", noFreeName(name));
    const reason = answer.slice(1).trim();
    if (/no space left|quota/i.test(reason)) {
      throw new InboxFileError("no_space", this.#context.noSpace(name));
    }
    throw new InboxFileError(
      "failed",
      `${name}: copying it into the inbox failed (${reason.slice(0, 200)})`,
    );
  }

  /** The bound of an upload or copy of `size` bytes. */
  #allowance(size: number): number {
    return this.#context.timeoutMs + Math.ceil(size / 1_048_576) * Defaults.inboxMsPerMiB;
  }
}
