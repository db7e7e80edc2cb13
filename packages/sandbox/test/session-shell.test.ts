import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { dockerOf } from "../src/docker-client.js";
import { type Sandbox, sessionHash } from "../src/index.js";
import { execOnce } from "../src/one-shot-exec.js";
import { sessionUser } from "../src/session-user.js";
import { oneShotCommand } from "../src/shell-scripts.js";
import {
  execIn,
  type Fixture,
  fixture,
  processesMatching,
  processList,
  testEngine,
} from "./helpers.js";

let fx: Fixture;
let sandbox: Sandbox;
let containerId: string;
beforeAll(async () => {
  fx = await fixture();
  sandbox = fx.sandbox();
  ({ containerId } = await sandbox.acquire("shell"));
});
afterAll(async () => {
  await fx.dispose();
});

const running = (needle: string) => processesMatching(containerId, needle);

describe("session shell", () => {
  it("starts in /workspace and keeps cwd, exports and unsets between calls", async () => {
    expect((await sandbox.run("shell", "keep", "pwd")).stdout).toBe("/workspace\n");
    await sandbox.run(
      "shell",
      "keep",
      "mkdir -p /tmp/deep && cd /tmp/deep && export COLOR=blue && unset HOSTNAME",
    );
    const result = await sandbox.run(
      "shell",
      "keep",
      'pwd; echo "$COLOR"; [ -n "$HOSTNAME" ] || echo h=unset',
    );
    expect(result.stdout).toBe("/tmp/deep\nblue\nh=unset\n");
  });

  it("separates stdout/stderr, returns exit codes and survives `exit`", async () => {
    const result = await sandbox.run("shell", "codes", "echo out; echo err >&2; cd /tmp; exit 5");
    expect(result).toMatchObject({ exitCode: 5, stdout: "out\n", stderr: "err\n" });
    expect((await sandbox.run("shell", "codes", "pwd")).stdout).toBe("/tmp\n");
    expect((await sandbox.run("shell", "codes", "if then")).exitCode).toBe(2);
    expect((await sandbox.run("shell", "codes", "printf 'no newline'")).stdout).toBe("no newline");
  });

  it("never leaks cwd or env to another session in the same container", async () => {
    await sandbox.run("shell", "alice", "cd /tmp && export SECRET=alice");
    const bob = await sandbox.run("shell", "bob", 'pwd; echo "s=$SECRET"');
    expect(bob.stdout).toBe("/workspace\ns=\n");
    expect((await sandbox.run("shell", "alice", 'echo "$SECRET"')).stdout).toBe("alice\n");
  });

  it("applies per-call cwd and env, the env for that call only", async () => {
    const first = await sandbox.run("shell", "opts", 'pwd; echo "$ONCE"', {
      cwd: "/tmp",
      env: { ONCE: "yes" },
    });
    expect(first.stdout).toBe("/tmp\nyes\n");
    expect((await sandbox.run("shell", "opts", 'pwd; echo "o=$ONCE"')).stdout).toBe("/tmp\no=\n");
  });

  it("runs one session's calls in order and keeps stdin away from commands", async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        sandbox.run("shell", "order", `echo ${i} >> /tmp/order.txt; cat`),
      ),
    );
    expect(results.every((r) => r.exitCode === 0 && r.stdout === "")).toBe(true);
    expect((await sandbox.run("shell", "order", "cat /tmp/order.txt")).stdout).toBe(
      `${Array.from({ length: 10 }, (_, i) => i).join("\n")}\n`,
    );
  });

  it("kills the command's processes on timeout and keeps the shell and its state", async () => {
    await sandbox.run("shell", "slow", "cd /tmp");
    const result = await sandbox.run(
      "shell",
      "slow",
      "sleep 4111 & (sleep 4112; echo x); sleep 4113",
      {
        timeoutMs: 400,
      },
    );
    expect(result.timedOut).toBe(true);
    expect(await running("sleep 411")).toEqual([]);
    const after = await sandbox.run("shell", "slow", "pwd");
    expect(after.stdout).toBe("/tmp\n");
  });

  it("kills a busy builtin loop on timeout", async () => {
    const result = await sandbox.run("shell", "loop", "while :; do :; done", { timeoutMs: 300 });
    expect(result.timedOut).toBe(true);
    expect((await sandbox.run("shell", "loop", "echo alive")).stdout).toBe("alive\n");
  });

  it("kills the command when the signal aborts", async () => {
    const controller = new AbortController();
    const pending = sandbox.run("shell", "abort", "sleep 4221", { signal: controller.signal });
    const sleeping = async () =>
      (await running("sleep 4221")).filter((line) => /^\s*\d+\s+sleep 4221$/.test(line));
    await waitUntil(async () => (await sleeping()).length === 1, "one sleep running");
    controller.abort();
    const result = await pending;
    expect(result.aborted).toBe(true);
    expect(await running("sleep 4221")).toEqual([]);
    expect((await sandbox.run("shell", "abort", "echo ok")).stdout).toBe("ok\n");
  });

  it("runs nothing for an already aborted signal and keeps the same shell", async () => {
    const before = await sandbox.run("shell", "pre", "echo $$");
    const result = await sandbox.run("shell", "pre", "touch /tmp/pre-aborted", {
      signal: AbortSignal.abort(),
    });
    expect(result.aborted).toBe(true);
    const check = await sandbox.run(
      "shell",
      "pre",
      "test -e /tmp/pre-aborted && echo yes || echo no",
    );
    expect(check.stdout).toBe("no\n");
    expect((await sandbox.run("shell", "pre", "echo $$")).stdout).toBe(before.stdout);
  });

  it("killSession kills every process of that session, background ones too, and no other", async () => {
    await sandbox.run("shell", "victim", "cd /tmp; sleep 4331 & sleep 4332 &");
    await sandbox.run("shell", "bystander", "sleep 4339 &");
    expect(await running("sleep 433")).toHaveLength(3);
    const killed = await sandbox.killSession("victim");
    expect(killed).toBeGreaterThanOrEqual(2);
    const left = await running("sleep 433");
    expect(left).toHaveLength(1);
    expect(left[0]).toContain("sleep 4339");
    expect((await sandbox.run("shell", "victim", "pwd")).stdout).toBe("/tmp\n");
    await sandbox.killSession("bystander");
  });

  it("reopens a shell that died and keeps the session's state", async () => {
    await sandbox.run("shell", "phoenix", "cd /tmp && export KEEP=1");
    const oldPid = (await sandbox.run("shell", "phoenix", "echo $$")).stdout.trim();
    const pidAlive = async (pid: string) =>
      (await processList(containerId)).some((line) => line.trim().split(/\s+/)[0] === pid);
    expect(await pidAlive(oldPid)).toBe(true);
    // Root in the container cannot read a session uid's environment (no CAP_SYS_PTRACE), so
    // the controller is killed by its pid (`$$` of a command is the controller's).
    await execIn(containerId, ["kill", "-9", oldPid]);
    await waitUntil(async () => !(await pidAlive(oldPid)), "the old shell gone");
    const result = await sandbox.run("shell", "phoenix", 'pwd; echo "$KEEP"; echo $$');
    const [cwd, keep, newPid] = result.stdout.split("\n");
    expect([cwd, keep]).toEqual(["/tmp", "1"]);
    expect(newPid).not.toBe(oldPid);
    // A persistent shell answers with the same pid again; a one-shot fallback would not.
    expect((await sandbox.run("shell", "phoenix", "echo $$")).stdout.trim()).toBe(newPid);
    expect(await pidAlive(newPid ?? "")).toBe(true);
  });

  it("shares the session state with the one-shot fallback", async () => {
    await sandbox.run("shell", "fallback", "cd /tmp && export VIA=shell");
    const script = oneShotCommand({
      command: 'pwd; echo "$VIA"; cd /; export VIA=oneshot',
      sessionHash: sessionHash("fallback"),
      commandId: "0123456789abcdef",
    });
    const docker = dockerOf(testEngine());
    const user = await sessionUser(docker, containerId, sessionHash("fallback"), false);
    const viaOneShot = await execOnce(docker, containerId, ["sh", "-c", script], { user });
    expect(viaOneShot.stdout).toBe("/tmp\nshell\n");
    expect((await sandbox.run("shell", "fallback", 'pwd; echo "$VIA"')).stdout).toBe(
      "/\noneshot\n",
    );
  });

  it("caps output and still finds the end of the command", async () => {
    const result = await sandbox.run("shell", "cap", "head -c 300000 /dev/zero | tr '\\0' y", {
      maxOutputBytes: 100,
    });
    expect(result.stdout).toBe("y".repeat(100));
    expect(result.truncated).toBe(true);
    expect((await sandbox.run("shell", "cap", "echo next")).stdout).toBe("next\n");
  });
});
