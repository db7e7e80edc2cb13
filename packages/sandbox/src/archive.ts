import type { IncomingMessage } from "node:http";
import { PassThrough, Readable } from "node:stream";
import type Docker from "dockerode";
import { extract } from "tar-stream";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { canonicalPath, type PathStat } from "./container-path.js";
import { isNotFound } from "./docker-errors.js";
import type { ContainerFile, ContainerLink } from "./types.js";

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

/** The engine's stat of one path (HEAD archive), without following a final symlink. */
async function statPath(
  container: Docker.Container,
  path: string,
  bound: CallBound,
): Promise<PathStat | undefined> {
  try {
    const head = (await boundedCall(
      "archive HEAD",
      bound,
      (abortSignal) => container.infoArchive({ path, abortSignal }),
      container.id,
    )) as IncomingMessage;
    head.resume();
    return parseStat(head.headers["x-docker-container-path-stat"]);
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * Reads one regular file out of a live container with the archive API, streamed (the
 * media fallback, SPEC §6.3). The archive API silently follows symlinks in every path
 * component, so the path is first made canonical ({@link canonicalPath}: `.`, `..` and `//`
 * normalised, each symlinked component replaced by its target). A path that is not
 * canonical (any component is a link, or it is not in normal form) is never read: the
 * answer is the canonical path as a {@link ContainerLink}, so the caller can apply its
 * policy to the real path and ask again with it. `undefined` when the path is not absolute,
 * does not exist, or is not a regular file. When the file is larger than `maxBytes`
 * nothing is transferred: the result carries the real `size` so the caller can report it,
 * and its stream fails on first read. Each request is bounded by `bound` until the engine
 * answers; the body streams without a bound (the caller caps what it reads).
 */
export async function readContainerFile(
  docker: Docker,
  containerId: string,
  path: string,
  maxBytes: number,
  bound: CallBound,
): Promise<ContainerFile | ContainerLink | undefined> {
  const container = docker.getContainer(containerId);
  const canonical = await canonicalPath(path, (prefix) => statPath(container, prefix, bound));
  if (canonical === undefined) return undefined;
  if (canonical.path !== path) return { linkTarget: canonical.path };
  const stat = canonical.stat;
  if (stat === undefined) return undefined;
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
  const tar = (await boundedCall(
    "archive GET",
    bound,
    (abortSignal) => container.getArchive({ path, abortSignal }),
    containerId,
  )) as IncomingMessage;
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
      // A reader that gives up early (too large, an upload failed) destroys `stream`: let that
      // reach the engine's response too, or it stays paused on its socket.
      stream.on("close", () => {
        if (!stream.readableEnded) tar.destroy();
      });
      entry.pipe(stream);
      resolve({ size: header.size ?? stat.size, stream });
    });
    parser.on("finish", () => resolve(undefined));
    parser.on("error", reject);
    tar.on("error", (error: Error) => parser.destroy(error));
    tar.pipe(parser);
  });
}
