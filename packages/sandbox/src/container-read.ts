import type { Duplex } from "node:stream";
import { PassThrough, Readable } from "node:stream";
import type Docker from "dockerode";
import { boundedCall, type CallBound } from "./bounded-call.js";
import { type ExecUser, userSpec } from "./exec-user.js";
import { FrameDecoder, StreamType } from "./frames.js";
import { exactEntry } from "./kill-script.js";
import { killProcesses } from "./one-shot-exec.js";
import { randomHex } from "./random-hex.js";
import { ExecMarker } from "./shell-scripts.js";
import type { ContainerFile, ContainerLink } from "./types.js";

/**
 * Runs inside the container as `sh -c ReadScript mediagate-read <path> <maxBytes>`. It opens
 * `<path>` once (on fd 3, following links like any open), asks the kernel which file that
 * descriptor really is (`readlink /proc/self/fd/3`), and sends content only when that real path
 * is exactly `<path>`: whatever the container renames or swaps meanwhile, the bytes come from the
 * descriptor that was named, never from a second lookup of the path. The answer on stdout is one
 * NUL-terminated header, then (for `S`) the content:
 * `M` missing or unopenable, `N` not a regular file, `L<real path>` opened through a link or a
 * non-normal path (nothing read), `S<size>` a regular file (content follows when size ≤ max),
 * `E<reason>` the image lacks a tool the script needs.
 * A FIFO met before the open is refused; one swapped in at the open blocks it until the read's
 * bound, then the reader is killed.
 */
export const ReadScript = `p=$1
[ -p "$p" ] && { printf 'N\\0'; exit 0; }
exec 3<"$p" || { printf 'M\\0'; exit 0; }
r=$(readlink /proc/self/fd/3 && echo .) || { printf 'Ecannot name the opened file (no readlink in the image?)\\0'; exit 0; }
r=\${r%?.}
[ "$r" = "$p" ] || { printf 'L%s\\0' "$r"; exit 0; }
[ -f /proc/self/fd/3 ] || { printf 'N\\0'; exit 0; }
s=$(stat -L -c %s /proc/self/fd/3 2>/dev/null) || s=$(wc -c </proc/self/fd/3) || { printf 'Ecannot size the file (no stat or wc in the image?)\\0'; exit 0; }
printf 'S%s\\0' $s
[ $s -le "$2" ] || exit 0
exec cat <&3
`;

/** Options of {@link readInContainer}. */
export interface ContainerReadOptions {
  /** Bound of the exec calls and of the wait for the header (the open); the content streams unbounded. */
  readonly bound: CallBound;
  /** Who reads (and who kills an abandoned reader); default the container's user. */
  readonly user?: ExecUser | undefined;
  /** Receives the kill of a reader that was given up on, so the caller can await it (shutdown). */
  readonly track?: ((work: Promise<unknown>) => void) | undefined;
}

type Header =
  | { readonly kind: "missing" }
  | { readonly kind: "link"; readonly target: string }
  | { readonly kind: "file"; readonly size: number };

/**
 * Reads one regular file out of a live container (the media fallback for a file on no host
 * mount) with a process inside the container, so the file is named by the descriptor that
 * reads it (see {@link ReadScript}): a path any component of which is a link, or that is not in
 * normal form (`.`, `..`, `//`, a trailing `/`), is never read and is answered with its real
 * path as a {@link ContainerLink}. The reader has the container's permissions (or `user`'s),
 * never more. `undefined` when the path is not absolute, is missing, or is not a regular file.
 * Over `maxBytes`, nothing is transferred: the real `size` comes back and the stream fails on
 * first read. A reader whose stream is given up early is killed. Needs `sh`, `readlink`,
 * `cat` and `stat` or `wc` in the image.
 */
export async function readInContainer(
  docker: Docker,
  containerId: string,
  path: string,
  maxBytes: number,
  options: ContainerReadOptions,
): Promise<ContainerFile | ContainerLink | undefined> {
  if (!path.startsWith("/") || path.includes("\0")) return undefined;
  const { bound } = options;
  const cap = Math.max(0, Math.min(Math.floor(maxBytes), Number.MAX_SAFE_INTEGER));
  const readerId = randomHex(8);
  const marker = `${ExecMarker}=${readerId}`;
  const container = docker.getContainer(containerId);
  const exec = await boundedCall(
    "exec create",
    bound,
    (abortSignal) =>
      container.exec({
        Cmd: ["sh", "-c", ReadScript, "mediagate-read", path, String(cap)],
        AttachStdin: false,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        Env: [marker],
        ...(options.user === undefined ? {} : { User: userSpec(options.user) }),
        abortSignal,
      }),
    containerId,
  );
  const kill = () => {
    const selection = { environ: exactEntry(ExecMarker, readerId) };
    const killing = killProcesses(docker, containerId, selection, options.user).catch(() => 0);
    options.track?.(killing);
  };
  let socket: Duplex;
  try {
    socket = (await boundedCall(
      "exec start",
      bound,
      (abortSignal) =>
        exec.start({ hijack: true, stdin: false, Detach: false, Tty: false, abortSignal }),
      containerId,
    )) as Duplex;
  } catch (error) {
    // A start cut off by the bound may still have started the reader.
    kill();
    throw error;
  }
  const reader = new ReaderStream(socket, maxBytes);
  const giveUp = () => {
    socket.destroy();
    kill();
  };
  let header: Header;
  try {
    header = await withBound(reader.header, bound, containerId);
  } catch (error) {
    giveUp();
    throw error;
  }
  if (header.kind === "missing") return undefined;
  if (header.kind === "link")
    return header.target.startsWith("/") ? { linkTarget: header.target } : undefined;
  const { size } = header;
  if (size > maxBytes) {
    socket.destroy();
    return { size, stream: overCap(path, size, maxBytes) };
  }
  reader.content.on("close", () => {
    if (!reader.content.readableEnded) giveUp();
  });
  return { size, stream: reader.content };
}

/** Splits the reader's stdout into its header and the content that follows. */
class ReaderStream {
  readonly content = new PassThrough();
  readonly header: Promise<Header>;
  #resolve: (header: Header) => void = () => {};
  #reject: (error: Error) => void = () => {};
  #head: Buffer[] = [];
  #parsed = false;
  #received = 0;

  constructor(
    readonly socket: Duplex,
    readonly maxBytes: number,
  ) {
    this.header = new Promise<Header>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    const decoder = new FrameDecoder((type, payload) => {
      if (type === StreamType.stdout) this.#onStdout(payload);
    });
    socket.on("data", (chunk: Buffer) => decoder.push(chunk));
    socket.once("end", () => this.#finish());
    socket.once("close", () => this.#finish());
    socket.on("error", (error: Error) => {
      this.#reject(error);
      this.content.destroy(error);
    });
    this.content.on("drain", () => socket.resume());
  }

  #onStdout(payload: Buffer): void {
    if (this.#parsed) {
      this.#write(payload);
      return;
    }
    const end = payload.indexOf(0);
    if (end < 0) {
      this.#head.push(payload);
      return;
    }
    this.#parsed = true;
    const text = Buffer.concat([...this.#head, payload.subarray(0, end)]).toString("utf8");
    this.#head = [];
    const header = parseHeader(text);
    if (header instanceof Error) this.#reject(header);
    else this.#resolve(header);
    const rest = payload.subarray(end + 1);
    if (rest.length > 0) this.#write(rest);
  }

  #write(bytes: Buffer): void {
    this.#received += bytes.length;
    if (this.#received > this.maxBytes) {
      this.content.destroy(new RangeError(`the file grew past the ${this.maxBytes}-byte cap`));
      return;
    }
    if (!this.content.write(bytes)) this.socket.pause();
  }

  #finish(): void {
    // A reader that ended without a header met something the script does not expect (a
    // shell that exits on a failed redirection): nothing was read, so nothing is there.
    if (!this.#parsed) this.#resolve({ kind: "missing" });
    this.#parsed = true;
    if (!this.content.destroyed && !this.content.writableEnded) this.content.end();
  }
}

function parseHeader(text: string): Header | Error {
  const tag = text.slice(0, 1);
  const value = text.slice(1);
  if (tag === "L") return { kind: "link", target: value };
  if (tag === "S" && /^\d+$/.test(value)) return { kind: "file", size: Number(value) };
  if (tag === "E") return new Error(`cannot read files out of the container: ${value}`);
  return { kind: "missing" };
}

/** Waits for the header at most `bound.timeoutMs` (a FIFO swapped in blocks the open). */
async function withBound<T>(work: Promise<T>, bound: CallBound, containerId: string): Promise<T> {
  return boundedCall("container read", bound, () => work, containerId);
}

function overCap(path: string, size: number, maxBytes: number): Readable {
  return new Readable({
    read() {
      this.destroy(new RangeError(`${path} is ${size} bytes, over the ${maxBytes}-byte cap`));
    },
  });
}
