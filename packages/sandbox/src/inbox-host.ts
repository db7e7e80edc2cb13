import { constants } from "node:fs";
import { type FileHandle, link, mkdir, open, unlink } from "node:fs/promises";
import { join } from "node:path";
import { codeOf } from "./docker-errors.js";
import { InboxFileError, writeAll } from "./inbox-bytes.js";
import { candidateNames } from "./inbox-name.js";
import { randomHex } from "./random-hex.js";

/** Why a file got no name: every one {@link candidateNames} offered was taken. */
export function noFreeName(name: string): string {
  return `${name}: no free name for it in the inbox (its numbered and random names are all taken)`;
}

/** A directory, opened without following a link at its last component. */
const DirectoryFlags = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
/** A new file that did not exist, never through a link. */
const TempFlags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Who an inbox file belongs to, and its modes (see `inboxOwner`). */
export interface InboxOwner {
  readonly uid: number;
  readonly gid: number;
  readonly fileMode: number;
  readonly dirMode: number;
}

/**
 * The inbox of a bind slot on a local engine, written from the host through the slot's
 * `workspace/` directory, which the container sees as `/workspace` and can fill with links.
 * The gateway (root) never resolves a path through anything the container made: it opens
 * `workspace/` (a mount point inside the container, so the container cannot replace it),
 * then `inbox` in it with `O_NOFOLLOW|O_DIRECTORY` — a link or a file there is refused — and
 * from then on names entries only through that descriptor (`/proc/self/fd/<fd>/<name>`, one
 * component, no link followed): the temp file is created `O_EXCL|O_NOFOLLOW`, ownership and
 * mode are set on its descriptor, and it is hard-linked (`link`, which never replaces and
 * never follows) to the first free name. Whatever the container renames meanwhile, every
 * operation stays in the directory the descriptor holds, which cannot leave the bind (a
 * rename across mounts fails with EXDEV).
 */
export class HostInbox {
  readonly #dir: FileHandle;
  readonly #owner: InboxOwner;
  /** `<slot dir>/workspace/inbox` on the host: where results say the files are. */
  readonly hostDir: string;

  private constructor(dir: FileHandle, hostDir: string, owner: InboxOwner) {
    this.#dir = dir;
    this.hostDir = hostDir;
    this.#owner = owner;
  }

  /**
   * Opens (making it when missing, owned by `owner` with `owner.dirMode`) the inbox under
   * `workspaceDir`. Throws `inbox_unusable` when `inbox` is a link or not a directory.
   */
  static async open(workspaceDir: string, owner: InboxOwner): Promise<HostInbox> {
    const workspace = await open(workspaceDir, DirectoryFlags);
    try {
      const path = `/proc/self/fd/${workspace.fd}/inbox`;
      const made = await mkdir(path, { mode: 0o700 }).then(
        () => true,
        (error: unknown) => {
          if (codeOf(error) === "EEXIST") return false;
          throw error;
        },
      );
      let dir: FileHandle;
      try {
        dir = await open(path, DirectoryFlags);
      } catch (error) {
        const code = codeOf(error);
        if (code !== "ELOOP" && code !== "ENOTDIR") throw error;
        throw new InboxFileError(
          "inbox_unusable",
          "/workspace/inbox is a link or not a directory: files are only written into a real directory there (move it away)",
          { cause: error },
        );
      }
      if (made) {
        await dir.chown(owner.uid, owner.gid);
        await dir.chmod(owner.dirMode);
      }
      return new HostInbox(dir, join(workspaceDir, "inbox"), owner);
    } finally {
      await workspace.close();
    }
  }

  /**
   * Streams `chunks` into a hidden temp file in the inbox (`.mediagate-<random>.part`), gives
   * it to the owner, runs `beforeLink` (classification: a throw there leaves nothing), and
   * links it to the first free one of `name`, `name-2`, … (`candidateNames`). Answers the name
   * it got. On any
   * failure the temp file is removed; nothing partial is ever visible under a final name.
   */
  async write(
    chunks: AsyncIterable<Buffer>,
    name: string,
    beforeLink: () => Promise<void>,
  ): Promise<string> {
    const temp = this.#at(`.mediagate-${randomHex(8)}.part`);
    const file = await open(temp, TempFlags, 0o600);
    try {
      try {
        for await (const chunk of chunks) await writeAll(file, chunk);
        await file.chown(this.#owner.uid, this.#owner.gid);
        await file.chmod(this.#owner.fileMode);
      } finally {
        await file.close();
      }
      await beforeLink();
      return await this.#linkFree(temp, name);
    } finally {
      await unlink(temp).catch(() => undefined);
    }
  }

  close(): Promise<void> {
    return this.#dir.close();
  }

  async #linkFree(temp: string, name: string): Promise<string> {
    for (const candidate of candidateNames(name)) {
      try {
        await link(temp, this.#at(candidate));
        return candidate;
      } catch (error) {
        if (codeOf(error) !== "EEXIST") throw error;
      }
    }
    throw new InboxFileError("failed", noFreeName(name));
  }

  /** `name` inside the held directory, whatever is at its old path now. */
  #at(name: string): string {
    return `/proc/self/fd/${this.#dir.fd}/${name}`;
  }
}
