import { close, closeSync, constants, fstat, lstat, open, type Stats } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { promisify } from "node:util";
import type Docker from "dockerode";
import { type ChannelFifos, RegistryDir, stateDirectory } from "./shell-scripts.js";

/**
 * A session shell's stdin, stdout and stderr as three FIFOs in the session's private state
 * directory, which the gateway opens through the host's view of the container's registry
 * volume (docs/sandbox.md, "How commands reach the shell"). Commands and their output then go
 * between the gateway and the shell through the kernel alone, where the exec's stream passes
 * each through the engine (`dockerd` and the container's shim, both ways): a warm command took
 * 0.95–1.01 ms p50 that way and takes 0.38–0.58 through FIFOs, and the engine's CPU per command
 * went from 0.37 ms to nothing (bench/README.md, "Issue 31, targets 2 and 4: commands through
 * FIFOs").
 *
 * Only for per-session uids: the FIFOs lie in `s/<hash>/`, which only the session's uid may
 * enter, beneath root-owned directories it cannot change, so the only name on the host path
 * the session controls is the FIFO's own, which is opened without following a link and must be
 * a FIFO owned by the session's uid. In root mode a command runs as the container's root,
 * which could turn a directory on that path into a link out of the volume; there the shell
 * keeps the exec's stream.
 */

/**
 * The names of the FIFOs of one shell (`id`: hex) in the session's state directory, as the
 * container sees them: `c<id>i`, `c<id>o`, `c<id>e`.
 */
export function channelFifos(sessionHash: string, id: string): ChannelFifos {
  const base = `${stateDirectory(sessionHash)}/c${id}`;
  return { input: `${base}i`, output: `${base}o`, errors: `${base}e` };
}

/**
 * The three FIFOs opened by the gateway: write commands to `input`, read the other two. The
 * read ends are read-only, so they end once nothing in the container holds the FIFO for
 * writing any more (the shell and every job it left running): the gateway reads a job's output
 * on after its shell was closed or killed, so the job does not die of SIGPIPE at its next line.
 * Until {@link Channel.release}, the gateway holds a write end of each as well, so that the
 * reads do not end before the shell has opened its own.
 */
export interface Channel {
  readonly input: net.Socket;
  readonly output: net.Socket;
  readonly errors: net.Socket;
  /** Drops the gateway's write ends of `output` and `errors`: the shell holds its own. */
  release(): void;
}

const openFile = promisify(open);
const statFd = promisify(fstat);
const closeFd = promisify(close);
const statPath = promisify(lstat);

/**
 * The host directory where the container's registry volume (`/run/mediagate`) is mounted,
 * when the gateway can reach it: the engine runs on this host and the gateway may enter the
 * engine's volumes (root beside a local engine). `undefined` otherwise (a remote engine, a
 * Docker Desktop VM, a gateway without access, a rootless engine whose container root is not
 * the host's): the shells then keep the exec's stream.
 */
export async function registryOnHost(
  docker: Docker,
  containerId: string,
): Promise<string | undefined> {
  const info = await docker.getContainer(containerId).inspect();
  const mount = info.Mounts?.find(
    (m) => m.Destination === RegistryDir && m.Type === "volume" && m.Source !== "",
  );
  if (mount === undefined) return undefined;
  try {
    // The volume's root, root-owned `0711` as the engine mounts it: only root in the container
    // makes entries there (`s/`, the session directories' parent, refused by the claim when it
    // is a link or not root's).
    const root = await statPath(mount.Source);
    return root.isDirectory() && root.uid === 0 ? mount.Source : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Opens the shell's three FIFOs on the host (`registry`: {@link registryOnHost}) without
 * following a link, each of which must be a FIFO owned by `uid`: `input` read and write (the
 * open does not wait for the shell's side), `output` and `errors` read-only beside a write end
 * held until {@link Channel.release}. Rejects, with nothing left open, when any is not.
 */
export async function openChannel(
  registry: string,
  fifos: ChannelFifos,
  uid: number,
): Promise<Channel> {
  const opened: number[] = [];
  const hostPath = (path: string) => join(registry, path.slice(RegistryDir.length + 1));
  const openFifo = async (path: string, flags: number): Promise<Stats> => {
    const fd = await openFile(hostPath(path), flags | constants.O_NONBLOCK | constants.O_NOFOLLOW);
    opened.push(fd);
    const stat = await statFd(fd);
    if (!stat.isFIFO() || stat.uid !== uid) throw new Error(`${path} is not a FIFO of uid ${uid}`);
    return stat;
  };
  try {
    await openFifo(fifos.input, constants.O_RDWR);
    for (const path of [fifos.output, fifos.errors]) {
      const held = await openFifo(path, constants.O_RDWR);
      const read = await openFifo(path, constants.O_RDONLY);
      if (read.ino !== held.ino || read.dev !== held.dev) throw new Error(`${path} was replaced`);
    }
  } catch (error) {
    await Promise.all(opened.map((fd) => closeFd(fd).catch(() => undefined)));
    throw error;
  }
  const [input, outputHeld, output, errorsHeld, errors] = opened as [
    number,
    number,
    number,
    number,
    number,
  ];
  let held = true;
  const sockets = {
    input: new net.Socket({ fd: input, readable: false, writable: true }),
    output: new net.Socket({ fd: output, readable: true, writable: false }),
    errors: new net.Socket({ fd: errors, readable: true, writable: false }),
  };
  // Never what keeps the gateway's process running.
  for (const socket of Object.values(sockets)) socket.unref();
  return {
    ...sockets,
    release() {
      if (!held) return;
      held = false;
      closeSync(outputHeld);
      closeSync(errorsHeld);
    },
  };
}
