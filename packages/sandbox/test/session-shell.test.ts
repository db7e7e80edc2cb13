import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DeadlineError } from "@mediagate/io";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { dockerOf } from "../src/docker-client.js";
import { type Sandbox, sessionHash } from "../src/index.js";
import { execOnce } from "../src/one-shot-exec.js";
import { sessionUser } from "../src/session-user.js";
import { commandEndMarker, MaxScriptArgumentBytes, oneShotCommand } from "../src/shell-scripts.js";
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

/**
 * A command that ends as its time limit passes: it ends once its first output was read, and
 * the gateway's event loop is held until it has and its limit has passed, so the timer fires
 * before the end of the command is read (as when a command ends at the very moment of its
 * limit). It exits with 3.
 */
function endingAtTheLimit() {
  const workspace = join(sandbox.slotDirectory("shell"), "workspace");
  const go = join(workspace, "limit-go");
  const gone = join(workspace, "limit-gone");
  // The first output must be read within it, or the command is stopped before it ends; the
  // 50 ms it was left little room for a pause of this worker or the engine beside the suite.
  const timeoutMs = 1_000;
  return {
    command:
      "echo go; while [ ! -e /workspace/limit-go ]; do :; done; touch /workspace/limit-gone; exit 3",
    options: {
      timeoutMs,
      onOutput: () => {
        if (existsSync(go)) return;
        writeFileSync(go, "");
        const read = performance.now(); // the command was sent before
        holdUntil(() => existsSync(gone) && performance.now() - read > timeoutMs);
      },
    },
    clear: () => {
      rmSync(go, { force: true });
      rmSync(gone, { force: true });
    },
  };
}

/** Blocks the event loop (no timer, no I/O callback runs) until `done` holds, 10 s at most. */
function holdUntil(done: () => boolean): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const until = performance.now() + 10_000;
  while (!done() && performance.now() < until) Atomics.wait(pause, 0, 0, 1);
}

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
      // The environment: a shell sets a HOSTNAME variable of its own when it starts.
      'pwd; echo "$COLOR"; env | grep -q ^HOSTNAME= || echo h=unset',
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

  it("reports a command's errors as sh would, never the wrapper's eval or its line numbers", async () => {
    const missing = await sandbox.run("shell", "errors", "/start");
    expect(missing).toMatchObject({ exitCode: 127, stderr: "sh: /start: not found\n" });
    const second = await sandbox.run("shell", "errors", "echo one\nnosuchcommand two");
    expect(second.stdout).toBe("one\n");
    expect(second.stderr).toBe("sh: nosuchcommand: not found\n");
    const syntax = await sandbox.run("shell", "errors", "echo 'open");
    expect(syntax.exitCode).toBe(2);
    expect(syntax.stderr).not.toMatch(/eval|line \d{2,}/);
    // Line numbers count from the command's first line, whatever the shell ran before.
    const lines = await sandbox.run("shell", "errors", 'echo "$LINENO"\ncd /nowhere');
    expect(lines).toMatchObject({
      exitCode: 2,
      stdout: "1\n",
      stderr: "sh: cd: line 2: can't cd to /nowhere: No such file or directory\n",
    });
    // A syntax error is `sh`'s: the lines before it run, as they would in `sh -c`.
    const late = await sandbox.run("shell", "errors", "echo before\nif then");
    expect(late).toMatchObject({ exitCode: 2, stdout: "before\n" });
    expect(late.stderr).toBe('sh: syntax error: unexpected "then"\n');
    expect(await sandbox.run("shell", "errors", "")).toMatchObject({ exitCode: 0, stderr: "" });
    expect(await sandbox.run("shell", "errors", "set -e; false; echo on")).toMatchObject({
      exitCode: 1,
      stdout: "",
    });
    // A session whose PATH finds no sh still runs commands (with the shell found at start).
    await sandbox.run("shell", "errors", "export PATH=/nowhere");
    const pathless = await sandbox.run("shell", "errors", 'echo "still $PATH"');
    expect(pathless).toMatchObject({ exitCode: 0, stdout: "still /nowhere\n" });
  });

  it("still runs (and keeps the state of) a command too long for one exec argument", async () => {
    const filler = "x".repeat(MaxScriptArgumentBytes);
    const result = await sandbox.run(
      "shell",
      "long",
      `cd /tmp && export LONG=yes && printf '%s' '${filler}' | wc -c`,
    );
    expect(result).toMatchObject({ exitCode: 0, stdout: `${MaxScriptArgumentBytes}\n` });
    expect((await sandbox.run("shell", "long", 'pwd; echo "$LONG"')).stdout).toBe("/tmp\nyes\n");
    // Its errors read as `sh`'s too, as a shorter command's do.
    const missing = await sandbox.run("shell", "long", `: '${filler}'\nnosuchcommand`);
    expect(missing).toMatchObject({ exitCode: 127, stderr: "sh: nosuchcommand: not found\n" });
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

  it("reports a command that ended as its time limit passed by how it ended, not as timed out", async () => {
    const limit = endingAtTheLimit();
    const result = await sandbox.run("shell", "limit", limit.command, limit.options);
    limit.clear();
    expect(result).toMatchObject({ exitCode: 3, stdout: "go\n", timedOut: false, aborted: false });
  });

  it("reports a one-shot exec that ended as its time limit passed by how it ended", async () => {
    const limit = endingAtTheLimit();
    const docker = dockerOf(testEngine());
    const result = await execOnce(docker, containerId, ["sh", "-c", limit.command], limit.options);
    limit.clear();
    expect(result).toMatchObject({ exitCode: 3, stdout: "go\n", timedOut: false, aborted: false });
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

  it("reports a caller's abort as an abort even when its reason is a DeadlineError", async () => {
    const controller = new AbortController();
    const pending = sandbox.run("shell", "turn", "sleep 4331", {
      signal: controller.signal,
      timeoutMs: 600_000,
    });
    await waitUntil(async () => (await running("sleep 4331")).length > 0, "the sleep running");
    controller.abort(new DeadlineError("the turn", 1000));
    const result = await pending;
    expect(result).toMatchObject({ aborted: true, timedOut: false });
  });

  it("runs nothing for an already aborted signal and keeps the same shell", async () => {
    // A command runs in a subshell of the session's shell: `$$` is the shell.
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

  it("reports the signal of a command that killed its own shell, and the next command runs", async () => {
    await sandbox.run("shell", "suicide", "cd /tmp");
    // `$$` is the session's shell: the command ends with it, its exit status unreported.
    const killed = await sandbox.run("shell", "suicide", "echo before; kill -9 $$");
    expect(killed).toMatchObject({ exitCode: 137, stdout: "before\n", timedOut: false });
    const group = await sandbox.run("shell", "suicide", "kill 0");
    expect(group).toMatchObject({ exitCode: 143, timedOut: false });
    const next = await sandbox.run("shell", "suicide", "pwd");
    expect(next).toMatchObject({ exitCode: 0, stdout: "/tmp\n" });
  });

  it("keeps running commands after an export too large for any exec, so `unset` can undo it", async () => {
    // Linux refuses an exec whose environment holds a string over 128 KiB (E2BIG).
    const big = await sandbox.run(
      "shell",
      "bigenv",
      "cd /tmp && export BIG=$(head -c 200000 /dev/zero | tr '\\0' a); echo set",
    );
    expect(big).toMatchObject({ exitCode: 0, stdout: "set\n" });
    // A command that is not a whole script goes to an `sh -c`, which cannot start now: it is
    // evaluated in the wrapper instead, so its own error still comes, after its first line.
    const broken = await sandbox.run("shell", "bigenv", "echo first\nif then");
    expect(broken).toMatchObject({ exitCode: 2, stdout: "first\n" });
    expect(broken.stderr).toMatch(/^sh: sh: Argument list too long\n.*syntax error/s);
    // Builtins run (the length of BIG, the kept cwd), and `unset` is kept.
    const builtin = await sandbox.run(
      "shell",
      "bigenv",
      'printf "%s %s\\n" "$PWD" "$BIG"; unset BIG',
    );
    expect(builtin).toMatchObject({ exitCode: 0, stdout: `/tmp ${"a".repeat(200_000)}\n` });
    const after = await sandbox.run("shell", "bigenv", "ls -d /tmp");
    expect(after).toMatchObject({ exitCode: 0, stdout: "/tmp\n", stderr: "" });
    // A command's own 126 (not executable) is its result: it does not run a second time.
    const own = await sandbox.run(
      "shell",
      "bigenv",
      "echo once >>/tmp/runs; printf 'echo x\\n' >/tmp/noexec.sh; /tmp/noexec.sh",
    );
    expect(own.exitCode).toBe(126);
    expect((await sandbox.run("shell", "bigenv", "cat /tmp/runs")).stdout).toBe("once\n");
  });

  it("keeps a session's commands running after another session filled /run/mediagate", async () => {
    // /run/mediagate holds every session's state file; one session can fill it through its
    // own state directory (docs/security.md, "Shared space").
    const small = fx.sandbox({ scratchBytes: 1024 * 1024 });
    await small.run("tiny", "victim", "cd /tmp && export KEEP=1");
    const fill = 'head -c 2000000 /dev/zero >"/run/mediagate/s/$MEDIAGATE_SESSION/fill"';
    await small.run("tiny", "attacker", fill);
    // The victim's state is saved into the full filesystem: its file is cut short.
    await small.run("tiny", "victim", "export MORE=$(head -c 8000 /dev/zero | tr '\\0' m)");
    expect(await small.run("tiny", "victim", "echo still")).toMatchObject({
      exitCode: 0,
      stdout: "still\n",
    });
    await small.run("tiny", "attacker", 'rm "/run/mediagate/s/$MEDIAGATE_SESSION/fill"');
    await small.run("tiny", "victim", "cd /var && export NEW=2");
    expect(await small.run("tiny", "victim", 'echo "$NEW"; pwd')).toMatchObject({
      exitCode: 0,
      stdout: "2\n/var\n",
    });
  });

  it("shares the session state with the one-shot fallback", async () => {
    await sandbox.run("shell", "fallback", "cd /tmp && export VIA=shell");
    const end = commandEndMarker();
    const script = oneShotCommand(
      {
        command: 'pwd; echo "$VIA"; cd /; export VIA=oneshot',
        sessionHash: sessionHash("fallback"),
        commandId: "0123456789abcdef",
      },
      end,
    );
    const docker = dockerOf(testEngine());
    const user = await sessionUser(docker, containerId, sessionHash("fallback"), false);
    const viaOneShot = await execOnce(docker, containerId, ["sh", "-c", script], {
      user,
      endMarker: end,
    });
    expect(viaOneShot.stdout).toBe("/tmp\nshell\n");
    expect((await sandbox.run("shell", "fallback", 'pwd; echo "$VIA"')).stdout).toBe(
      "/\noneshot\n",
    );
    // Its line numbers count from the command's first line, as the session shell's do.
    const lines = oneShotCommand(
      {
        command: 'echo "$LINENO"\ncd /nowhere',
        sessionHash: sessionHash("fallback"),
        commandId: "1",
      },
      end,
    );
    const numbered = await execOnce(docker, containerId, ["sh", "-c", lines], {
      user,
      endMarker: end,
    });
    expect(numbered).toMatchObject({
      stdout: "1\n",
      stderr: "sh: cd: line 2: can't cd to /nowhere: No such file or directory\n",
    });
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
