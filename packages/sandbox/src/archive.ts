import type { IncomingMessage } from "node:http";
import { PassThrough, Readable } from "node:stream";
import type Docker from "dockerode";
import { extract } from "tar-stream";
import { isNotFound } from "./docker-errors.js";
import type { ContainerFile, ContainerLink } from "./types.js";

interface PathStat {
  readonly size: number;
  readonly mode: number;
  readonly linkTarget: string;
}

/** Go's os.ModeSymlink. */
const GoSymlinkMode = 0x08000000;

/** Go's os.ModeType bits: dir, symlink, named pipe, socket, device, char device, irregular. */
const GoNonRegularMode =
  0x80000000 | 0x08000000 | 0x02000000 | 0x01000000 | 0x04000000 | 0x00200000 | 0x00080000;

/** Parses the `X-Docker-Container-Path-Stat` header (base64 JSON). */
function parseStat(header: string | string[] | undefined): PathStat | undefined {
  if (typeof header !== "string") return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(header, "base64").toString("utf8"));
    if (typeof value !== "object" || value === null) return undefined;
    const size = "size" in value ? value.size : undefined;
    const mode = "mode" in value ? value.mode : undefined;
    const linkTarget = "linkTarget" in value ? value.linkTarget : "";
    if (typeof size !== "number" || typeof mode !== "number") return undefined;
    return { size, mode, linkTarget: typeof linkTarget === "string" ? linkTarget : "" };
  } catch {
    return undefined;
  }
}

/**
 * Reads one regular file out of a live container with the archive API, streamed (the
 * media fallback, SPEC §6.3). `undefined` when the path does not exist or is not a regular
 * file; a symlink is not followed but answered with its target ({@link ContainerLink}), so
 * the caller can check the real path before deciding to read it. When the file is larger than `maxBytes` nothing is
 * transferred: the result carries the real `size` so the caller can report it, and its
 * stream fails on first read.
 */
export async function readContainerFile(
  docker: Docker,
  containerId: string,
  path: string,
  maxBytes: number,
): Promise<ContainerFile | ContainerLink | undefined> {
  const container = docker.getContainer(containerId);
  let stat: PathStat | undefined;
  try {
    const head = (await container.infoArchive({ path })) as IncomingMessage;
    head.resume();
    stat = parseStat(head.headers["x-docker-container-path-stat"]);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
  if (stat === undefined) return undefined;
  if ((stat.mode & GoSymlinkMode) !== 0 && stat.linkTarget.startsWith("/")) {
    return { linkTarget: stat.linkTarget };
  }
  if ((stat.mode & GoNonRegularMode) !== 0) return undefined;
  if (stat.size > maxBytes) {
    const size = stat.size;
    const stream = new Readable({
      read() {
        this.destroy(new RangeError(`${path} is ${size} bytes, over the ${maxBytes}-byte cap`));
      },
    });
    return { size, stream };
  }
  const tar = await container.getArchive({ path });
  const parser = extract();
  return await new Promise<ContainerFile | undefined>((resolve, reject) => {
    let first = true;
    parser.on("entry", (header, entry, next) => {
      if (!first) {
        entry.resume();
        entry.on("end", next);
        return;
      }
      first = false;
      if (header.type !== "file") {
        entry.resume();
        entry.on("end", next);
        resolve(undefined);
        return;
      }
      entry.on("end", next);
      const stream = new PassThrough();
      entry.on("error", (error: Error) => stream.destroy(error));
      entry.pipe(stream);
      resolve({ size: header.size ?? stat.size, stream });
    });
    parser.on("finish", () => resolve(undefined));
    parser.on("error", reject);
    tar.on("error", (error: Error) => parser.destroy(error));
    tar.pipe(parser);
  });
}
