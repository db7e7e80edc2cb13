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
  // The swap race (a loop swapping a directory for a symlink while the gateway reads) is
  // test/long/container-read-swap.long.test.ts: 800 reads, too slow for this suite.

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
