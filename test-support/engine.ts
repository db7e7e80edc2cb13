import type { RequestOptions } from "node:http";

/**
 * The Docker endpoint of the test run: `DOCKER_HOST` when it is set (any scheme the sandbox's
 * `connectDocker` takes), else `undefined`, which means the default socket. Every test hands it
 * to whatever talks to the engine (`connectDocker({ host })`, a gateway's environment, the CLI
 * it spawns), so a run pointed at another engine never touches the default one.
 */
export function testDockerHost(): string | undefined {
  const host = process.env.DOCKER_HOST?.trim();
  return host === undefined || host === "" ? undefined : host;
}

/**
 * The environment variables a gateway under test reads (hand them to its `readEnv`): nothing
 * but its user home and the test run's Docker endpoint.
 */
export function testEnvironment(home: string): Record<string, string | undefined> {
  return { HOME: home, DOCKER_HOST: testDockerHost() };
}

/**
 * `DOCKER_HOST` for a child process's environment (a CLI or gateway a test or benchmark
 * spawns): the test run's endpoint, or nothing for the default socket.
 */
export function dockerHostVariable(): { DOCKER_HOST?: string } {
  const host = testDockerHost();
  return host === undefined ? {} : { DOCKER_HOST: host };
}

/**
 * `MEDIAGATE_TEST_SHELL_CHANNEL=exec` runs the sandbox tests with `shellChannel: "exec"` (the
 * long suite's second run of the shell and isolation tests); `auto` (the default) otherwise.
 */
export function testShellChannel(): "auto" | "exec" {
  return process.env.MEDIAGATE_TEST_SHELL_CHANNEL === "exec" ? "exec" : "auto";
}

/**
 * The warm pool size the sandbox suites run with (`MEDIAGATE_TEST_WARM_POOL`, default 0: off).
 * Above 0, the sandboxes the suites' fixtures make are per-session (`persistent: false`, unless a
 * test sets it) with that pool, warmed as they are made, so every new slot of a test claims a
 * warm container: the isolation and fault suites run again with the pool on
 * (`pnpm --filter @mediagate/sandbox test:warm-pool`).
 */
export function testWarmPool(): number {
  const size = Number(process.env.MEDIAGATE_TEST_WARM_POOL ?? "0");
  return Number.isSafeInteger(size) && size > 0 ? size : 0;
}

/**
 * Where the engine of the test run listens, as `node:http` request options: `DOCKER_HOST`
 * (unix, tcp or http), else the default socket. For tests that speak the Engine API directly.
 */
export function testEngineAddress(): Pick<RequestOptions, "socketPath" | "host" | "port"> {
  const host = testDockerHost();
  if (host === undefined) return { socketPath: "/var/run/docker.sock" };
  if (host.startsWith("unix://")) return { socketPath: host.slice("unix://".length) };
  const url = new URL(host.includes("://") ? host : `tcp://${host}`);
  if (url.protocol !== "tcp:" && url.protocol !== "http:") {
    throw new Error(`DOCKER_HOST ${url.protocol}// is not supported here (unix, tcp, http)`);
  }
  return { host: url.hostname, port: Number(url.port || 2375) };
}
