import { DeadlineError } from "@mediagate/io";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import type { Sandbox } from "../src/index.js";
import { type Fixture, fixture, processesMatching } from "./helpers.js";

let fx: Fixture;
let sandbox: Sandbox;
let containerId: string;
beforeAll(async () => {
  fx = await fixture();
  sandbox = fx.sandbox();
  ({ containerId } = await sandbox.acquire("exec"));
});
afterAll(async () => {
  await fx.dispose();
});

const running = (needle: string) => processesMatching(containerId, needle);

describe("one-shot exec", () => {
  it("separates stdout and stderr and returns the exit code", async () => {
    const result = await sandbox.exec("exec", "echo out; echo err >&2; echo more; exit 7");
    expect(result).toMatchObject({
      exitCode: 7,
      stdout: "out\nmore\n",
      stderr: "err\n",
      timedOut: false,
      aborted: false,
    });
    expect(result.truncated).toBe(false);
  });

  it("runs an argv array without a shell, in the given cwd with the given env", async () => {
    const result = await sandbox.exec("exec", ["sh", "-c", 'echo "$GREETING"'], {
      env: { GREETING: "a b;c" },
    });
    expect(result.stdout).toBe("a b;c\n");
    expect((await sandbox.exec("exec", ["pwd"], { cwd: "/tmp" })).stdout).toBe("/tmp\n");
  });

  it("caps the output it keeps and says so", async () => {
    const result = await sandbox.exec(
      "exec",
      "head -c 100000 /dev/zero | tr '\\0' x; head -c 10 /dev/zero >&2",
      {
        maxOutputBytes: 1000,
      },
    );
    expect(result.stdout).toBe("x".repeat(1000));
    expect(result.stderr.length).toBe(10);
    expect(result.truncated).toBe(true);
    expect(result.exitCode).toBe(0);
  });

  it("kills the command and its children on timeout", async () => {
    const result = await sandbox.exec("exec", "sleep 3111 & sleep 3112; echo never", {
      timeoutMs: 300,
    });
    expect(result.timedOut).toBe(true);
    expect(result.stdout).toBe("");
    expect(result.exitCode).not.toBe(0);
    expect(await running("sleep 311")).toEqual([]);
  });

  it("kills the command when the signal aborts", async () => {
    const controller = new AbortController();
    const pending = sandbox.exec("exec", ["sh", "-c", "sleep 3221 & exec sleep 3222"], {
      signal: controller.signal,
    });
    const sleeping = async () =>
      (await running("sleep 322")).filter((line) => /^\s*\d+\s+sleep 322[12]$/.test(line));
    await waitUntil(async () => (await sleeping()).length === 2, "both sleeps running");
    controller.abort();
    const result = await pending;
    expect(result.aborted).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(await running("sleep 322")).toEqual([]);
  });

  it("reports a caller's abort as an abort even when its reason is a DeadlineError", async () => {
    const controller = new AbortController();
    const pending = sandbox.exec("exec", ["sleep", "3331"], {
      signal: controller.signal,
      timeoutMs: 600_000,
    });
    await waitUntil(async () => (await running("sleep 3331")).length > 0, "the sleep running");
    controller.abort(new DeadlineError("the turn", 1000));
    const result = await pending;
    expect(result).toMatchObject({ aborted: true, timedOut: false });
  });

  it("reports a missing binary as a failed exec, not a crash", async () => {
    const result = await sandbox.exec("exec", ["no-such-binary"]);
    expect(result.exitCode).toBe(126);
    expect(`${result.stdout}${result.stderr}`).toContain("not found");
  });

  it("does not start anything for an already aborted signal", async () => {
    const result = await sandbox.exec("exec", "touch /tmp/should-not-exist", {
      signal: AbortSignal.abort(),
    });
    expect(result.aborted).toBe(true);
    expect((await sandbox.exec("exec", "test -e /tmp/should-not-exist")).exitCode).toBe(1);
  });

  it("reads a file out of the container with the archive API", async () => {
    await sandbox.exec(
      "exec",
      "mkdir -p /workspace/out && printf 'hello archive' > /workspace/out/a.txt",
    );
    const file = await sandbox.readFile("exec", "/workspace/out/a.txt", 1024);
    if (file === undefined || "linkTarget" in file) throw new Error(`not a file: ${file}`);
    expect(file.size).toBe(13);
    const chunks: Buffer[] = [];
    for await (const chunk of file.stream) chunks.push(Buffer.from(chunk as Buffer));
    expect(Buffer.concat(chunks).toString()).toBe("hello archive");

    expect(await sandbox.readFile("exec", "/workspace/out/missing.txt", 1024)).toBeUndefined();
    expect(await sandbox.readFile("exec", "/workspace/out", 1024)).toBeUndefined();
    expect(await sandbox.readFile("no-container", "/workspace/out/a.txt", 1024)).toBeUndefined();

    const big = await sandbox.readFile("exec", "/workspace/out/a.txt", 5);
    if (big === undefined || "linkTarget" in big) throw new Error(`not a file: ${big}`);
    expect(big.size).toBe(13);
    await expect(
      (async () => {
        for await (const _ of big.stream) break;
      })(),
    ).rejects.toThrow(/over the 5-byte cap/);
  });

  it("answers a symlink in the container with its resolved target, unfollowed", async () => {
    await sandbox.exec(
      "exec",
      "ln -sf /etc/passwd /tmp/pw && ln -sf /tmp/pw /tmp/chain && ln -sf a.txt /workspace/out/rel",
    );
    expect(await sandbox.readFile("exec", "/tmp/pw", 1024)).toEqual({ linkTarget: "/etc/passwd" });
    expect(await sandbox.readFile("exec", "/tmp/chain", 1024)).toEqual({
      linkTarget: "/etc/passwd",
    });
    expect(await sandbox.readFile("exec", "/workspace/out/rel", 1024)).toEqual({
      linkTarget: "/workspace/out/a.txt",
    });
  });

  it("never reads through a symlinked parent directory: answers the canonical path", async () => {
    await sandbox.exec(
      "exec",
      "mkdir -p /root/.aws && printf secret > /root/.aws/credentials && ln -sfn ../root/.aws /workspace/k",
    );
    expect(await sandbox.readFile("exec", "/workspace/k/credentials", 1024)).toEqual({
      linkTarget: "/root/.aws/credentials",
    });
    expect(await sandbox.readFile("exec", "/workspace/k/", 1024)).toEqual({
      linkTarget: "/root/.aws",
    });
  });

  it("normalises dot-dot, dot and doubled slashes instead of reading them", async () => {
    expect(await sandbox.readFile("exec", "/workspace/../etc/passwd", 1024)).toEqual({
      linkTarget: "/etc/passwd",
    });
    expect(await sandbox.readFile("exec", "/workspace//out/./a.txt", 1024)).toEqual({
      linkTarget: "/workspace/out/a.txt",
    });
    expect(await sandbox.readFile("exec", "workspace/out/a.txt", 1024)).toBeUndefined();
  });

  it("resolves a chain of links through several components to one canonical path", async () => {
    await sandbox.exec(
      "exec",
      "mkdir -p /tmp/real/inner && printf chained > /tmp/real/inner/file && ln -sfn /tmp/real /tmp/hop1 && ln -sfn ../tmp/hop1 /workspace/hop2 && ln -sfn inner /tmp/real/alias",
    );
    const answer = await sandbox.readFile("exec", "/workspace/hop2/alias/file", 1024);
    expect(answer).toEqual({ linkTarget: "/tmp/real/inner/file" });
    const file = await sandbox.readFile("exec", "/tmp/real/inner/file", 1024);
    if (file === undefined || "linkTarget" in file) throw new Error(`not a file: ${file}`);
    const chunks: Buffer[] = [];
    for await (const chunk of file.stream) chunks.push(Buffer.from(chunk as Buffer));
    expect(Buffer.concat(chunks).toString()).toBe("chained");
  });
});
