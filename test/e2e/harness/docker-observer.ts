import { request } from "node:http";
import { testEngineAddress } from "../../../test-support/engine.js";

/** A container as the engine lists it. */
export interface ObservedContainer {
  readonly id: string;
  readonly state: string;
  readonly labels: Readonly<Record<string, string>>;
}

/** What a command run with {@link DockerObserver.exec} printed and how it ended. */
export interface ObservedExec {
  readonly stdout: string;
  readonly stderr: string;
  readonly exitCode: number;
}

interface EngineAnswer {
  readonly status: number;
  readonly body: Buffer;
}

/** Splits the engine's multiplexed exec stream (8-byte frame headers) into stdout and stderr. */
function demultiplex(raw: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let at = 0;
  while (at + 8 <= raw.length) {
    const stream = raw[at];
    const size = raw.readUInt32BE(at + 4);
    const frame = raw.subarray(at + 8, at + 8 + size);
    (stream === 2 ? err : out).push(frame);
    at += 8 + size;
  }
  return {
    stdout: Buffer.concat(out).toString("utf8"),
    stderr: Buffer.concat(err).toString("utf8"),
  };
}

/**
 * A read-mostly client of the Docker Engine API, spoken directly over the socket, so tests can
 * observe what the gateway did (which containers exist, what runs in them) without going
 * through the code under test. It creates nothing; `removeForce` and `removeImage` exist for cleanup only.
 */
export class DockerObserver {
  readonly #address = testEngineAddress();

  async #call(method: string, path: string, body?: unknown): Promise<EngineAnswer> {
    const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    return new Promise((resolve, reject) => {
      const req = request(
        {
          ...this.#address,
          method,
          path,
          headers: payload
            ? { "content-type": "application/json", "content-length": payload.length }
            : {},
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () =>
            resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(payload);
    });
  }

  async #json<T>(method: string, path: string, body?: unknown): Promise<T> {
    const answer = await this.#call(method, path, body);
    if (answer.status >= 300) {
      throw new Error(`docker ${method} ${path}: ${answer.status} ${answer.body.toString()}`);
    }
    return JSON.parse(answer.body.toString("utf8")) as T;
  }

  /** Every container (running or not) carrying all of `labels`. */
  async containers(labels: Readonly<Record<string, string>>): Promise<ObservedContainer[]> {
    const filters = JSON.stringify({
      label: Object.entries(labels).map(([key, value]) => `${key}=${value}`),
    });
    const listed = await this.#json<
      { Id: string; State: string; Labels: Record<string, string> }[]
    >("GET", `/containers/json?all=1&filters=${encodeURIComponent(filters)}`);
    return listed.map((c) => ({ id: c.Id, state: c.State, labels: c.Labels ?? {} }));
  }

  /** The containers of a gateway profile (label `mediagate.profile`). */
  profileContainers(profileLabel: string): Promise<ObservedContainer[]> {
    return this.containers({ "mediagate.agent": "1", "mediagate.profile": profileLabel });
  }

  /** Whether a container with this id still exists. */
  async exists(id: string): Promise<boolean> {
    const answer = await this.#call("GET", `/containers/${id}/json`);
    if (answer.status === 404) return false;
    if (answer.status >= 300) throw new Error(`docker inspect ${id}: ${answer.status}`);
    return true;
  }

  /** The exec instances the engine holds for the container (each `docker exec` adds one). */
  async execIds(id: string): Promise<string[]> {
    const inspected = await this.#json<{ ExecIDs: string[] | null }>(
      "GET",
      `/containers/${id}/json`,
    );
    return inspected.ExecIDs ?? [];
  }

  /** Runs `argv` in a running container (as docker exec does) and collects its output. */
  async exec(id: string, argv: readonly string[]): Promise<ObservedExec> {
    const created = await this.#json<{ Id: string }>("POST", `/containers/${id}/exec`, {
      AttachStdout: true,
      AttachStderr: true,
      Cmd: argv,
    });
    const started = await this.#call("POST", `/exec/${created.Id}/start`, {
      Detach: false,
      Tty: false,
    });
    if (started.status >= 300) throw new Error(`docker exec start: ${started.status}`);
    const inspected = await this.#json<{ ExitCode: number | null }>(
      "GET",
      `/exec/${created.Id}/json`,
    );
    return { ...demultiplex(started.body), exitCode: inspected.ExitCode ?? -1 };
  }

  /** The command lines of every process in the container (`ps -o args`). */
  async processes(id: string): Promise<string[]> {
    const ps = await this.exec(id, ["ps", "-o", "args"]);
    return ps.stdout
      .split("\n")
      .slice(1)
      .map((line) => line.trim())
      .filter((line) => line !== "");
  }

  /**
   * The command lines of every process in the container as the engine lists them from the
   * host (`docker top`): nothing runs inside the container, so it answers when the container
   * has no process to spare.
   */
  async top(id: string): Promise<string[]> {
    const listed = await this.#json<{ Titles: string[]; Processes: string[][] | null }>(
      "GET",
      `/containers/${id}/top?ps_args=${encodeURIComponent("-o pid,args")}`,
    );
    const args = listed.Titles.indexOf("COMMAND");
    return (listed.Processes ?? []).map((row) => row.slice(args).join(" ").trim());
  }

  /** The container's process count and its limit (`PidsLimit`), from the engine's stats. */
  async pids(id: string): Promise<{ current: number; limit: number | undefined }> {
    const stats = await this.#json<{ pids_stats?: { current?: number; limit?: number } }>(
      "GET",
      `/containers/${id}/stats?stream=false&one-shot=true`,
    );
    return { current: stats.pids_stats?.current ?? 0, limit: stats.pids_stats?.limit };
  }

  /** Stops a container as an operator would (`docker stop -t 0`), behind the gateway's back. */
  async stop(id: string): Promise<void> {
    const answer = await this.#call("POST", `/containers/${id}/stop?t=0`);
    if (answer.status >= 300 && answer.status !== 304) {
      throw new Error(`docker stop ${id}: ${answer.status} ${answer.body.toString()}`);
    }
  }

  /** The image as `docker save` writes it (a tar archive), held in memory: small images only. */
  async imageArchive(ref: string): Promise<Buffer> {
    const answer = await this.#call("GET", `/images/${encodeURIComponent(ref)}/get`);
    if (answer.status >= 300) throw new Error(`docker save ${ref}: ${answer.status}`);
    return answer.body;
  }

  /** Whether the engine holds an image under this reference. */
  async hasImage(ref: string): Promise<boolean> {
    const answer = await this.#call("GET", `/images/${encodeURIComponent(ref)}/json`);
    if (answer.status === 404) return false;
    if (answer.status >= 300) throw new Error(`docker image inspect ${ref}: ${answer.status}`);
    return true;
  }

  /** Removes an image reference (`docker rmi -f`; 404 counts as done). */
  async removeImage(ref: string): Promise<void> {
    const answer = await this.#call("DELETE", `/images/${encodeURIComponent(ref)}?force=1`);
    if (answer.status >= 300 && answer.status !== 404) {
      throw new Error(`docker rmi ${ref}: ${answer.status} ${answer.body.toString()}`);
    }
  }

  /** Force-removes a container (leftovers, or an operator's `docker rm -f`; 404 counts as done). */
  async removeForce(id: string): Promise<void> {
    const answer = await this.#call("DELETE", `/containers/${id}?force=1&v=1`);
    if (answer.status >= 300 && answer.status !== 404) {
      throw new Error(`docker rm ${id}: ${answer.status} ${answer.body.toString()}`);
    }
  }
}
