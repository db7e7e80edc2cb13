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
  ({ containerId } = await sandbox.acquire("read"));
});
afterAll(async () => {
  await fx.dispose();
});

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString();
}

/** Reads `path` and says what came back: `link:<target>`, `missing`, or the content. */
async function outcome(path: string, maxBytes = 1024, sessionKey?: string): Promise<string> {
  const answer = await sandbox.readFile("read", path, maxBytes, { sessionKey });
  if (answer === undefined) return "missing";
  if ("linkTarget" in answer) return `link:${answer.linkTarget}`;
  return text(answer.stream);
}

describe("reading a file out of the container", () => {
  it("never returns a protected file while a loop swaps a directory for a symlink (50 reads)", async () => {
    const setup = await sandbox.exec(
      "read",
      "mkdir -p /root/.ssh /tmp/d && printf KEY > /root/.ssh/id_rsa && printf decoy > /tmp/d/id_rsa && ln -s /root/.ssh /tmp/lnk",
    );
    expect(setup.exitCode).toBe(0);
    const loop = new AbortController();
    const swapping = sandbox.exec(
      "read",
      "renice -n 19 -p $$ >/dev/null; while :; do mv /tmp/d /tmp/real; mv /tmp/lnk /tmp/d; mv /tmp/d /tmp/lnk; mv /tmp/real /tmp/d; done",
      { signal: loop.signal, timeoutMs: 300_000 },
    );
    const seen: string[] = [];
    try {
      for (let i = 0; i < 50; i++) seen.push(await outcome("/tmp/d/id_rsa"));
    } finally {
      loop.abort();
      await swapping;
    }
    // The directory was renamed between the open and the naming of the descriptor: that
    // answers the file's new real path, never its bytes.
    expect(seen).not.toContain("KEY");
    for (const answer of seen) expect(answer).toMatch(/^(decoy|missing|link:\/.*)$/);
    expect(seen.filter((a) => a.startsWith("link:")).length).toBeGreaterThan(0);
  });

  it("reads as the session's own user: another session's private file is not read", async () => {
    const made = await sandbox.run(
      "read",
      "alice",
      "printf mine > /tmp/private && chmod 600 /tmp/private",
    );
    expect(made.exitCode).toBe(0);
    expect(await outcome("/tmp/private", 1024, "alice")).toBe("mine");
    expect(await outcome("/tmp/private", 1024, "mallory")).toBe("missing");
    expect(await outcome("/tmp/private")).toBe("missing");
  });

  it("answers a FIFO as no file, without waiting for a writer", async () => {
    await sandbox.exec("read", "mkfifo /tmp/fifo");
    expect(await outcome("/tmp/fifo")).toBe("missing");
  });

  it("kills the reader in the container when the stream is given up", async () => {
    await sandbox.exec("read", "head -c 8000000 /dev/zero > /tmp/big");
    const answer = await sandbox.readFile("read", "/tmp/big", 10_000_000);
    if (answer === undefined || "linkTarget" in answer) throw new Error("not a file");
    expect(answer.size).toBe(8_000_000);
    for await (const _ of answer.stream) break;
    await waitUntil(
      async () => (await processesMatching(containerId, "cat")).length === 0,
      "the reader gone",
    );
  });

  it("reads a file on a tmpfs mount, which the engine's archive API cannot see", async () => {
    const tmpfs = fx.sandbox({ persistent: false, filesystem: "tmpfs" });
    await tmpfs.exec("task-tmpfs-read", "printf 'in memory' > /workspace/m.txt");
    const answer = await tmpfs.readFile("task-tmpfs-read", "/workspace/m.txt", 1024);
    if (answer === undefined || "linkTarget" in answer) throw new Error("not a file");
    expect(await text(answer.stream)).toBe("in memory");
    await tmpfs.cleanup("task-tmpfs-read");
  });
});
