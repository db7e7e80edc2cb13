import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../src/index.js";
import { docker, execIn, type Fixture, fixture } from "./helpers.js";
import { classify, listIn, MiB, pngFile, randomFile, saved, streamOf } from "./inbox-helpers.js";

let fx: Fixture;
let sandbox: Sandbox;
let containerId: string;
const suiteStart = Date.now();
const slot = "inbox-tmpfs";
const alice = "agent:t:discord:dm:1";

beforeAll(async () => {
  fx = await fixture();
  sandbox = fx.sandbox({ filesystem: "tmpfs", tmpfsBytes: 8 * MiB });
  ({ containerId } = await sandbox.acquire(slot));
});
afterAll(async () => {
  await fx.dispose();
});

async function emptyInbox(): Promise<void> {
  await execIn(containerId, ["sh", "-c", "rm -rf /workspace/inbox /workspace/elsewhere"]);
}

/** How many `extract-to-dir` events (one per `putArchive`) the engine has recorded for the container. */
async function archiveUploads(): Promise<number> {
  const stream = await docker.getEvents({
    since: Math.floor(suiteStart / 1000) - 1,
    until: Math.ceil(Date.now() / 1000) + 1,
    filters: { container: [containerId], event: ["extract-to-dir"] },
  });
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString().split("\n").filter(Boolean).length;
}

describe("saving files a user sent (tmpfs slot, through the engine's archive API)", () => {
  it("uploads a file with putArchive and lands it byte-for-byte, owned by the session's user", async () => {
    await emptyInbox();
    const before = await archiveUploads();
    const file = randomFile(2 * MiB + 5);
    const results = await sandbox.saveToInbox(
      slot,
      [
        { name: "data.csv", source: streamOf(file.bytes), maxBytes: 4 * MiB },
        { name: "pic", source: streamOf(pngFile(9000)), maxBytes: 4 * MiB },
      ],
      { sessionKey: alice, classify },
    );
    expect(saved(results[0])).toMatchObject({
      filename: "data.csv",
      containerPath: "/workspace/inbox/data.csv",
      hostPath: undefined,
      size: file.bytes.length,
      sha256: file.sha256,
    });
    expect(saved(results[1])).toMatchObject({ kind: "photo", mime: "image/png" });
    const inside = await sandbox.run(
      slot,
      alice,
      "sha256sum /workspace/inbox/data.csv | cut -d' ' -f1; stat -c '%u %g %a' /workspace/inbox/data.csv /workspace/inbox; id -u",
    );
    const [sum, fileStat, dirStat, uid] = inside.stdout.trim().split("\n");
    expect(sum).toBe(file.sha256);
    expect(fileStat).toBe(`${uid} 2000000 664`);
    expect(dirStat).toBe(`${uid} 2000000 2770`);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual(["data.csv", "pic"]);
    expect((await archiveUploads()) - before).toBe(2);
    // Nothing stays staged on the container's own filesystem.
    const staged = await execIn(containerId, ["ls", "-A", "/run/mediagate/in"]);
    expect(staged.trim()).toBe("");
  });

  it("lands hostile names sanitized inside the inbox", async () => {
    await emptyInbox();
    const names = [
      "../../x",
      ";rm -rf ~;.txt",
      `${"n".repeat(300)}.txt`,
      "a\u202Eb.txt",
      ".bashrc",
    ];
    const results = await sandbox.saveToInbox(
      slot,
      [...names, ".bashrc"].map((name) => ({ name, source: [Buffer.from(name)], maxBytes: 1024 })),
      { sessionKey: alice, classify },
    );
    const filenames = results.map((result) => saved(result).filename);
    expect(filenames).toEqual([
      "x",
      "_rm_-rf_.txt",
      `${"n".repeat(96)}.txt`,
      "ab.txt",
      "bashrc",
      "bashrc-2",
    ]);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual([...filenames].sort());
    expect(await listIn(sandbox, slot, alice, "/workspace")).toEqual(["inbox"]);
    expect(await listIn(sandbox, slot, alice, "/root")).toEqual([]);
  });

  it("refuses a file over its limit before anything reaches the container", async () => {
    await emptyInbox();
    const before = await archiveUploads();
    const results = await sandbox.saveToInbox(
      slot,
      [
        { name: "big.bin", source: streamOf(randomFile(2 * MiB).bytes), maxBytes: MiB },
        { name: "ok.txt", source: [Buffer.from("ok")], maxBytes: MiB },
      ],
      { sessionKey: alice, classify },
    );
    expect(results[0]).toMatchObject({ status: "refused", reason: "too_large" });
    saved(results[1]);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual(["ok.txt"]);
    expect((await archiveUploads()) - before).toBe(1);
  });

  it("refuses a file the tmpfs cannot hold, leaves nothing of it, and saves the next", async () => {
    await emptyInbox();
    const results = await sandbox.saveToInbox(
      slot,
      [
        { name: "fill.bin", source: streamOf(randomFile(10 * MiB).bytes), maxBytes: 64 * MiB },
        { name: "after.txt", source: [Buffer.from("after")], maxBytes: MiB },
      ],
      { sessionKey: alice, classify },
    );
    expect(results[0]).toMatchObject({ status: "refused", reason: "no_space" });
    expect(results[0]?.status === "refused" && results[0].message).toContain(
      "no space left in /workspace (its size is 8 MiB)",
    );
    saved(results[1]);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual(["after.txt"]);
  });

  it("refuses a /workspace/inbox link the container planted and writes nothing where it points", async () => {
    await emptyInbox();
    const planted = await sandbox.run(
      slot,
      alice,
      "mkdir /workspace/elsewhere && ln -s /workspace/elsewhere /workspace/inbox",
    );
    expect(planted.exitCode).toBe(0);
    const [result] = await sandbox.saveToInbox(
      slot,
      [{ name: "x.txt", source: [Buffer.from("payload")], maxBytes: 100 }],
      { sessionKey: alice, classify },
    );
    expect(result).toMatchObject({ status: "refused", reason: "inbox_unusable" });
    expect(await listIn(sandbox, slot, alice, "/workspace/elsewhere")).toEqual([]);
  });
});
