import type { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import type { Sandbox } from "../src/index.js";
import { docker, execIn, type Fixture, fixture } from "./helpers.js";
import { classify, listIn, MiB, pngFile, randomFile, saved, streamOf } from "./inbox-helpers.js";

let fx: Fixture;
let sandbox: Sandbox;
let containerId: string;
const slot = "inbox-tmpfs";
const alice = "agent:t:discord:dm:1";
const bob = "agent:t:discord:dm:2";

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

/**
 * What `action` returned and how many `extract-to-dir` events (one per `putArchive`) the engine
 * emitted for the container while it ran. Read live from an event stream opened before the
 * action: a `since` query replays the engine's last 256 events only, and the full suite's other
 * files roll those over within seconds. The stream is read up to a sentinel, a `getArchive` of
 * the container's hostname file, whose `archive-path` event comes after every event of the action.
 */
async function archiveUploadsDuring<T>(action: () => Promise<T>): Promise<[T, number]> {
  const stream = (await docker.getEvents({
    filters: { container: [containerId], event: ["extract-to-dir", "archive-path"] },
  })) as Readable;
  const actions: string[] = [];
  let pending = "";
  stream.on("data", (chunk: Buffer) => {
    pending += chunk.toString();
    const lines = pending.split("\n");
    pending = lines.pop() ?? "";
    for (const line of lines) {
      if (line.trim() !== "") actions.push((JSON.parse(line) as { Action: string }).Action);
    }
  });
  try {
    const result = await action();
    const archive = await docker.getContainer(containerId).getArchive({ path: "/etc/hostname" });
    archive.resume();
    await waitUntil(() => actions.includes("archive-path"), "the sentinel's archive-path event");
    const before = actions.slice(0, actions.indexOf("archive-path"));
    return [result, before.filter((name) => name === "extract-to-dir").length];
  } finally {
    stream.destroy();
  }
}

describe("saving files a user sent (tmpfs slot, through the engine's archive API)", () => {
  it("uploads a file with putArchive and lands it byte-for-byte, owned by the session's user", async () => {
    await emptyInbox();
    const file = randomFile(2 * MiB + 5);
    const [results, uploads] = await archiveUploadsDuring(() =>
      sandbox.saveToInbox(
        slot,
        [
          { name: "data.csv", source: streamOf(file.bytes), maxBytes: 4 * MiB },
          { name: "pic", source: streamOf(pngFile(9000)), maxBytes: 4 * MiB },
        ],
        { sessionKey: alice, classify },
      ),
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
    expect(uploads).toBe(2);
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

  it("saves a file under a random name when another session took all its numbered names", async () => {
    await emptyInbox();
    const flood = await sandbox.run(
      slot,
      bob,
      "mkdir -p /workspace/inbox && cd /workspace/inbox && : > photo.jpg && i=2 && while [ $i -le 100 ]; do : > photo-$i.jpg; i=$((i + 1)); done",
    );
    expect(flood.exitCode).toBe(0);
    const [result] = await sandbox.saveToInbox(
      slot,
      [{ name: "photo.jpg", source: [Buffer.from("alice's photo")], maxBytes: 100 }],
      { sessionKey: alice, classify },
    );
    const got = saved(result);
    expect(got.filename).toMatch(/^photo-[0-9a-f]{16}\.jpg$/);
    const inside = await sandbox.run(slot, alice, `cat /workspace/inbox/${got.filename}`);
    expect(inside.stdout).toBe("alice's photo");
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toHaveLength(101);
  });

  it("never links a file into a directory another session made under its name", async () => {
    await emptyInbox();
    const planted = await sandbox.run(slot, bob, "mkdir -p /workspace/inbox/x.txt");
    expect(planted.exitCode).toBe(0);
    const [result] = await sandbox.saveToInbox(
      slot,
      [{ name: "x.txt", source: [Buffer.from("payload")], maxBytes: 100 }],
      { sessionKey: alice, classify },
    );
    expect(saved(result).filename).toBe("x-2.txt");
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox/x.txt")).toEqual([]);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual(["x-2.txt", "x.txt"]);
  });

  it("refuses a file over its limit before anything reaches the container", async () => {
    await emptyInbox();
    const [results, uploads] = await archiveUploadsDuring(() =>
      sandbox.saveToInbox(
        slot,
        [
          { name: "big.bin", source: streamOf(randomFile(2 * MiB).bytes), maxBytes: MiB },
          { name: "ok.txt", source: [Buffer.from("ok")], maxBytes: MiB },
        ],
        { sessionKey: alice, classify },
      ),
    );
    expect(results[0]).toMatchObject({ status: "refused", reason: "too_large" });
    saved(results[1]);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual(["ok.txt"]);
    expect(uploads).toBe(1);
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

  it("refuses a file that does not fit in /run/mediagate to stage, naming scratchBytes, and saves the next", async () => {
    const small = fx.sandbox({ filesystem: "tmpfs", tmpfsBytes: 8 * MiB, scratchBytes: MiB });
    const task = "task-staging";
    const results = await small.saveToInbox(
      task,
      [
        { name: "big.bin", source: streamOf(randomFile(2 * MiB).bytes), maxBytes: 64 * MiB },
        { name: "after.txt", source: [Buffer.from("after")], maxBytes: MiB },
      ],
      { sessionKey: alice, classify },
    );
    expect(results[0]).toMatchObject({ status: "refused", reason: "no_space" });
    expect(results[0]?.status === "refused" && results[0].message).toContain(
      "big.bin: no space left to stage it in /run/mediagate (its size is 1 MiB: sandbox.scratchBytes)",
    );
    saved(results[1]);
    expect(await listIn(small, task, alice, "/workspace/inbox")).toEqual(["after.txt"]);
    expect(await listIn(small, task, alice, "/run/mediagate/in")).toEqual([]);
    await small.cleanup(task, { force: true, deleteDirs: true });
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
