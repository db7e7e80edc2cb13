import { mkdir, readdir, readFile, stat } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Sandbox } from "../src/index.js";
import { execIn, type Fixture, fixture, pathExists } from "./helpers.js";
import {
  classify,
  failingStream,
  listIn,
  MiB,
  pngFile,
  randomFile,
  saved,
  seenHeads,
  streamOf,
} from "./inbox-helpers.js";

let fx: Fixture;
let sandbox: Sandbox;
const slot = "inbox";
const alice = "agent:t:telegram:dm:1";
const bob = "agent:t:telegram:dm:2";

beforeAll(async () => {
  fx = await fixture();
  sandbox = fx.sandbox();
  await sandbox.acquire(slot);
});
afterAll(async () => {
  await fx.dispose();
});

/** Empties the workspace between tests (as root, so whatever a test left goes). */
async function emptyInbox(): Promise<void> {
  const { containerId } = await sandbox.acquire(slot);
  await execIn(containerId, ["sh", "-c", "rm -rf /workspace/inbox /workspace/moved"]);
}

describe("saving files a user sent (bind slot, from the host)", () => {
  it("streams a file into /workspace/inbox byte-for-byte, owned by the session's user", async () => {
    await emptyInbox();
    const file = randomFile(3 * MiB + 17);
    const [result] = await sandbox.saveToInbox(
      slot,
      [{ name: "report.pdf", source: streamOf(file.bytes), maxBytes: 10 * MiB }],
      { sessionKey: alice, classify },
    );
    const got = saved(result);
    expect(got).toMatchObject({
      name: "report.pdf",
      filename: "report.pdf",
      containerPath: "/workspace/inbox/report.pdf",
      size: file.bytes.length,
      sha256: file.sha256,
      kind: "document",
    });
    const inside = await sandbox.run(
      slot,
      alice,
      "sha256sum /workspace/inbox/report.pdf | cut -d' ' -f1; stat -c '%u %g %a' /workspace/inbox/report.pdf /workspace/inbox; id -u",
    );
    const [sum, fileStat, dirStat, uid] = inside.stdout.trim().split("\n");
    expect(sum).toBe(file.sha256);
    expect(fileStat).toBe(`${uid} 2000000 664`);
    expect(dirStat).toBe(`${uid} 2000000 2770`);
    expect(got.hostPath).toBe(join(sandbox.slotDirectory(slot), "workspace/inbox/report.pdf"));
    expect((await readFile(got.hostPath ?? "")).equals(file.bytes)).toBe(true);
    // The session can work on it as its own file; no temp file is left beside it.
    expect(
      (await sandbox.run(slot, alice, "echo more >> /workspace/inbox/report.pdf")).exitCode,
    ).toBe(0);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual(["report.pdf"]);
  });

  it("gives each session's files to that session's own uid", async () => {
    await emptyInbox();
    const results = await sandbox.saveToInbox(
      slot,
      [{ name: "b.txt", source: [Buffer.from("bob's")], maxBytes: 100 }],
      { sessionKey: bob, classify },
    );
    saved(results[0]);
    const bobUid = (await sandbox.run(slot, bob, "id -u")).stdout.trim();
    const aliceUid = (await sandbox.run(slot, alice, "id -u")).stdout.trim();
    expect(bobUid).not.toBe(aliceUid);
    const owner = await sandbox.run(slot, bob, "stat -c %u /workspace/inbox/b.txt");
    expect(owner.stdout.trim()).toBe(bobUid);
  });

  it("classifies by content, showing the classifier the first 4100 bytes", async () => {
    await emptyInbox();
    const results = await sandbox.saveToInbox(
      slot,
      [
        { name: "photo.dat", source: streamOf(pngFile(100_000)), maxBytes: MiB },
        { name: "tiny.txt", source: [Buffer.from("hi")], maxBytes: MiB },
      ],
      { sessionKey: alice, classify },
    );
    expect(saved(results[0])).toMatchObject({ kind: "photo", mime: "image/png" });
    expect(saved(results[1])).toMatchObject({ kind: "document", size: 2 });
    expect(seenHeads.get("photo.dat")).toBe(4100);
    expect(seenHeads.get("tiny.txt")).toBe(2);
  });

  it("lands hostile names sanitized inside the inbox, each unique", async () => {
    await emptyInbox();
    const names = [
      "../../x",
      ";rm -rf ~;.txt",
      `${"n".repeat(300)}.txt`,
      "invoice\u202Efdp.exe",
      ".bashrc",
      "dup.txt",
      "dup.txt",
    ];
    const results = await sandbox.saveToInbox(
      slot,
      names.map((name) => ({ name, source: [Buffer.from(name)], maxBytes: 1024 })),
      { sessionKey: alice, classify },
    );
    const filenames = results.map((result) => saved(result).filename);
    expect(filenames).toEqual([
      "x",
      "_rm_-rf_.txt",
      `${"n".repeat(96)}.txt`,
      "invoicefdp.exe",
      "bashrc",
      "dup.txt",
      "dup-2.txt",
    ]);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual([...filenames].sort());
    expect(await listIn(sandbox, slot, alice, "/workspace")).toEqual(["inbox"]);
    expect(await listIn(sandbox, slot, alice, "/root")).toEqual([]);
    const slotDir = sandbox.slotDirectory(slot);
    expect((await readdir(slotDir)).sort()).toEqual([".owner", "home", "workspace"]);
    const dup2 = await sandbox.run(slot, alice, "cat /workspace/inbox/dup-2.txt");
    expect(dup2.stdout).toBe("dup.txt");
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

  it("refuses a file over its limit, leaves nothing of it, and still saves the next", async () => {
    await emptyInbox();
    const big = streamOf(randomFile(2 * MiB).bytes);
    const next = randomFile(1000);
    const results = await sandbox.saveToInbox(
      slot,
      [
        { name: "big.bin", source: big, maxBytes: MiB },
        { name: "next.bin", source: [next.bytes], maxBytes: MiB },
      ],
      { sessionKey: alice, classify },
    );
    expect(results[0]).toMatchObject({ status: "refused", name: "big.bin", reason: "too_large" });
    expect(results[0]?.status === "refused" && results[0].message).toContain("big.bin");
    expect(big.destroyed).toBe(true);
    expect(saved(results[1]).sha256).toBe(next.sha256);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual(["next.bin"]);
  });

  it("refuses a file announced over its limit without reading it", async () => {
    await emptyInbox();
    let reads = 0;
    const source = new Readable({
      read() {
        reads++;
        this.push(null);
      },
    });
    const [result] = await sandbox.saveToInbox(
      slot,
      [{ name: "huge.mp4", source, maxBytes: MiB, declaredBytes: 2 * MiB }],
      { sessionKey: alice, classify },
    );
    expect(result).toMatchObject({ status: "refused", reason: "too_large" });
    expect(reads).toBe(0);
    expect(source.destroyed).toBe(true);
  });

  it("refuses a file whose download fails midway and leaves nothing of it", async () => {
    await emptyInbox();
    const results = await sandbox.saveToInbox(
      slot,
      [
        { name: "cut.bin", source: failingStream(300_000), maxBytes: MiB },
        { name: "ok.txt", source: [Buffer.from("ok")], maxBytes: MiB },
      ],
      { sessionKey: alice, classify },
    );
    expect(results[0]).toMatchObject({ status: "refused", reason: "source_failed" });
    expect(results[0]?.status === "refused" && results[0].message).toContain("connection reset");
    saved(results[1]);
    expect(await listIn(sandbox, slot, alice, "/workspace/inbox")).toEqual(["ok.txt"]);
  });

  it("never writes outside the slot through a /workspace/inbox link the container planted", async () => {
    await emptyInbox();
    const outside = join(fx.home, "outside");
    await mkdir(outside, { recursive: true });
    const planted = await sandbox.run(slot, alice, `ln -s ${outside} /workspace/inbox`);
    expect(planted.exitCode).toBe(0);
    const [result] = await sandbox.saveToInbox(
      slot,
      [{ name: "x.txt", source: [Buffer.from("payload")], maxBytes: 100 }],
      { sessionKey: alice, classify },
    );
    expect(result).toMatchObject({ status: "refused", reason: "inbox_unusable" });
    expect(await readdir(outside)).toEqual([]);
  });

  it("keeps writing into the directory it opened when the container swaps the inbox for a link mid-write", async () => {
    await emptyInbox();
    await sandbox.run(slot, alice, "mkdir -p /workspace/inbox");
    const outside = join(fx.home, "outside-swap");
    await mkdir(outside, { recursive: true });
    async function* swappingSource(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(100_000, 1);
      const swap = await sandbox.run(
        slot,
        alice,
        `mv /workspace/inbox /workspace/moved && ln -s ${outside} /workspace/inbox`,
      );
      expect(swap.exitCode).toBe(0);
      yield Buffer.alloc(100_000, 2);
    }
    const [result] = await sandbox.saveToInbox(
      slot,
      [{ name: "swap.bin", source: swappingSource(), maxBytes: MiB }],
      { sessionKey: alice, classify },
    );
    saved(result);
    expect(await readdir(outside)).toEqual([]);
    expect(await listIn(sandbox, slot, alice, "/workspace/moved")).toEqual(["swap.bin"]);
    const size = await sandbox.run(slot, alice, "wc -c < /workspace/moved/swap.bin");
    expect(size.stdout.trim()).toBe("200000");
  });

  it("/reset removes the inbox with the rest of the workspace", async () => {
    await emptyInbox();
    const [result] = await sandbox.saveToInbox(
      slot,
      [{ name: "keep.txt", source: [Buffer.from("x")], maxBytes: 10 }],
      { sessionKey: alice, classify },
    );
    const hostPath = saved(result).hostPath ?? "";
    expect(await pathExists(hostPath)).toBe(true);
    await sandbox.cleanup(slot, { force: true, deleteDirs: true });
    expect(await pathExists(hostPath)).toBe(false);
    const after = await sandbox.run(slot, alice, "ls -A /workspace");
    expect(after.stdout).toBe("");
  });
});

describe("root mode (user: root)", () => {
  it("gives the files to the image's user, with root's usual modes", async () => {
    const rooted = fx.sandbox({ user: "root", persistent: false });
    const rootSlot = "inbox-root";
    try {
      const [result] = await rooted.saveToInbox(
        rootSlot,
        [{ name: "r.txt", source: [Buffer.from("r")], maxBytes: 10 }],
        { sessionKey: alice, classify },
      );
      saved(result);
      const inside = await rooted.run(rootSlot, alice, "stat -c '%u %g %a' /workspace/inbox/r.txt");
      expect(inside.stdout.trim()).toBe("0 0 644");
    } finally {
      await rooted.cleanup(rootSlot, { force: true, deleteDirs: true });
    }
  });

  it("refuses a file without a byte limit before touching the sandbox", async () => {
    const source = Readable.from([Buffer.from("x")]);
    await expect(
      sandbox.saveToInbox(slot, [{ name: "x", source, maxBytes: Number.NaN }], {
        sessionKey: alice,
        classify,
      }),
    ).rejects.toThrow(/maxBytes/);
    expect(source.destroyed).toBe(true);
  });
});

describe("the slot's disk ceiling", () => {
  it("refuses a file that does not fit, leaves nothing of it, and saves the next", async () => {
    const limited = fx.sandbox({ diskLimitBytes: 16 * MiB, persistent: false });
    const diskSlot = "inbox-disk";
    try {
      const results = await limited.saveToInbox(
        diskSlot,
        [
          { name: "too-big.bin", source: streamOf(randomFile(20 * MiB).bytes), maxBytes: 64 * MiB },
          { name: "small.txt", source: [Buffer.from("small")], maxBytes: MiB },
        ],
        { sessionKey: alice, classify },
      );
      expect(results[0]).toMatchObject({ status: "refused", reason: "no_space" });
      expect(results[0]?.status === "refused" && results[0].message).toContain(
        "disk ceiling is 16 MiB",
      );
      saved(results[1]);
      expect(await listIn(limited, diskSlot, alice, "/workspace/inbox")).toEqual(["small.txt"]);
      const hostInbox = join(limited.slotDirectory(diskSlot), "workspace/inbox");
      expect((await stat(hostInbox)).isDirectory()).toBe(true);
    } finally {
      await limited.cleanup(diskSlot, { force: true, deleteDirs: true });
    }
  });

  it("a reset stops a save still streaming, so the slot's disk can be deleted", async () => {
    const limited = fx.sandbox({ diskLimitBytes: 16 * MiB, persistent: false });
    const diskSlot = "inbox-reset";
    const slotDir = limited.slotDirectory(diskSlot);
    let started: () => void = () => {};
    const streaming = new Promise<void>((resolve) => {
      started = resolve;
    });
    async function* stalled(): AsyncGenerator<Buffer> {
      yield Buffer.alloc(1000);
      started();
      await new Promise(() => {}); // a download that never finishes
    }
    const saving = limited.saveToInbox(
      diskSlot,
      [{ name: "slow.bin", source: stalled(), maxBytes: MiB }],
      { sessionKey: alice, classify },
    );
    await streaming;
    await limited.cleanup(diskSlot, { force: true, deleteDirs: true });
    const [result] = await saving;
    expect(result).toMatchObject({ status: "refused", reason: "aborted" });
    expect(await pathExists(slotDir)).toBe(false);
  });
});
