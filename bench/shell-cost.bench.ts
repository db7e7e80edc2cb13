/**
 * Where a warm session-shell call's time goes (not a test; issue 31, target 2). One container
 * of the sandbox image (`sleep`, removed at the end), one `docker exec -i sh` held open through
 * dockerode (hijacked, as the session shell is), and for each variant the round trip from
 * writing its line to reading its end marker: 50 warm-ups, then `--calls` calls. Prints one JSON
 * line per variant, `{"bench": "shell_cost_<variant>", "p50_ms", "p90_ms", "n"}`.
 *
 * `pnpm bench:shell-cost [--calls N]`; env MEDIAGATE_BENCH_IMAGE (default
 * `mediagate-sandbox:test`). The variants, each adding one part of what the session shell runs
 * per command (`packages/sandbox/src/shell-scripts.ts`, `commandSubshell`):
 *   relay        `printf` of the end marker: the engine's stream relay alone
 *   relay_both   a line on stdout, then the marker on stderr (a command's two end markers)
 *   fork         a subshell `( : )` first
 *   fork_exec    a subshell that runs `sh -c ':'` (the command's own shell)
 *   fork_state   a subshell that sources the state file and saves it (tmpfs)
 *   fork_function  a subshell that sources the state, defines the command as a function
 *                (`eval`), sets the trap that saves the state and calls the function
 *   whole        what the session shell runs for `echo hi` (`controllerCommand`): subshell,
 *                state, markers, the command's function with the trap that saves the state
 * then the same shell moved to FIFOs in a directory bound from the host (as the session
 * shell's channel, `packages/sandbox/src/shell-channel.ts`), and again:
 *   fifo_relay   `printf` of the end marker through the FIFOs, no engine on the way
 *   fifo_whole   `whole` through the FIFOs
 */
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { chmodSync, constants, mkdtempSync, openSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Duplex } from "node:stream";
import { controllerCommand, controllerInit } from "@mediagate/sandbox";
import Docker from "dockerode";

const image = process.env.MEDIAGATE_BENCH_IMAGE ?? "mediagate-sandbox:test";
const args = process.argv.slice(2);
const callsAt = args.indexOf("--calls");
const calls = callsAt >= 0 ? Number(args[callsAt + 1]) : 400;
if (!Number.isInteger(calls) || calls < 10) {
  throw new Error(`--calls: got ${args[callsAt + 1]}, expected an integer ≥ 10`);
}

const End = "END";
const state = "/dev/shm/mg-bench/env";
const hash = "0123456789abcdef";
const variants: Record<string, string> = {
  relay: `printf '${End}\\n'`,
  relay_both: `printf 'x\\n'; printf '${End}\\n' >&2`,
  fork: `(:) </dev/null; printf '${End}\\n'`,
  fork_exec: `(sh -c ':') </dev/null; printf '${End}\\n'`,
  fork_state: `( . ${state}; export PWD; export -p >${state} ) </dev/null; printf '${End}\\n'`,
  fork_function: `( . ${state}; __mg_c='echo hi'; eval "__mg_f() {
$__mg_c
}"; trap 'export PWD; export -p >${state}' EXIT; __mg_f ) </dev/null >/dev/null; printf '${End}\\n'`,
  // The session shell's own script (its stderr marker is `END` alone, like the others').
  whole: controllerCommand({ command: "echo hi", sessionHash: hash, commandId: hash }, End),
};

const docker = new Docker();
// The FIFOs' directory, bound to /chan in the container.
const chan = mkdtempSync(join(tmpdir(), "mg-bench-chan-"));
chmodSync(chan, 0o755);
execFileSync("mkfifo", ["-m", "0600", join(chan, "i"), join(chan, "o"), join(chan, "e")]);
const container = await docker.createContainer({
  Image: image,
  Cmd: ["sleep", "3600"],
  name: `mg-bench-shell-cost-${randomBytes(4).toString("hex")}`,
  // \`/run/mediagate\` is a tmpfs in a sandbox container (docs/sandbox.md): the session's state.
  HostConfig: {
    AutoRemove: false,
    Tmpfs: { "/run/mediagate": "mode=0711" },
    Binds: [`${chan}:/chan`],
  },
});
const cleanUp = async () => {
  await container.remove({ force: true }).catch(() => undefined);
  rmSync(chan, { recursive: true, force: true });
};
process.once("SIGINT", () => void cleanUp().then(() => process.exit(130)));
try {
  await container.start();
  const exec = await container.exec({
    Cmd: ["sh"],
    AttachStdin: true,
    AttachStdout: true,
    AttachStderr: true,
    Tty: false,
  });
  const stream = (await exec.start({
    hijack: true,
    stdin: true,
    Detach: false,
    Tty: false,
  })) as Duplex;
  let waiting: (() => void) | undefined;
  let seen = "";
  const received = (chunk: Buffer) => {
    // The multiplexed frames' headers are binary: only whether the marker arrived matters.
    seen += chunk.toString("latin1");
    if (seen.includes(`${End}\n`) && waiting !== undefined) {
      seen = "";
      const done = waiting;
      waiting = undefined;
      done();
    }
  };
  stream.on("data", received);
  let input: { write(line: string): unknown } = stream;
  const roundTrip = (line: string) =>
    new Promise<void>((resolve) => {
      waiting = resolve;
      input.write(`${line}\n`);
    });
  // The session's state as the session shell sets it up (root mode), and the bare variants'.
  await roundTrip(
    `${controllerInit(hash, "READY")}mkdir -p /dev/shm/mg-bench && export -p >${state}; printf '${End}\\n'`,
  );
  const measure = async (name: string, script: string) => {
    for (let i = 0; i < 50; i++) await roundTrip(script);
    const samples: number[] = [];
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      await roundTrip(script);
      samples.push(performance.now() - started);
    }
    samples.sort((a, b) => a - b);
    const at = (p: number) => samples[Math.max(0, Math.ceil(p * samples.length) - 1)] ?? Number.NaN;
    const round = (ms: number) => Math.round(ms * 1000) / 1000;
    const line = {
      bench: `shell_cost_${name}`,
      p50_ms: round(at(0.5)),
      p90_ms: round(at(0.9)),
      n: calls,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  };
  for (const [name, script] of Object.entries(variants)) await measure(name, script);
  // The shell moved to the FIFOs, opened here first (read and write: no open waits).
  const fd = (name: string) => openSync(join(chan, name), constants.O_RDWR | constants.O_NONBLOCK);
  const fifoIn = new net.Socket({ fd: fd("i"), readable: false, writable: true });
  const fifoOut = new net.Socket({ fd: fd("o"), readable: true, writable: false });
  const fifoErr = new net.Socket({ fd: fd("e"), readable: true, writable: false });
  fifoOut.on("data", received);
  fifoErr.on("data", received);
  await roundTrip(`exec </chan/i >/chan/o 2>/chan/e; printf '${End}\\n'`);
  input = fifoIn;
  await measure("fifo_relay", variants.relay!);
  await measure("fifo_whole", variants.whole!);
  for (const socket of [fifoIn, fifoOut, fifoErr]) socket.destroy();
  stream.end();
  stream.destroy();
} finally {
  await cleanUp();
}
