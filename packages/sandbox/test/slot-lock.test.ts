import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { withSlotLock } from "../src/slot-lock.js";

const script = join(dirname(fileURLToPath(import.meta.url)), "fixtures/hold-slot-lock.mjs");

/** A second process holding the slot's lock (resolves once it holds it). */
async function holdInOtherProcess(slotDir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [script, slotDir], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  let out = "";
  child.stdout?.setEncoding("utf8");
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("held")) resolve();
    });
    child.once("exit", (code) => reject(new Error(`holder exited (${code}) before holding`)));
  });
  return child;
}

let home: string;
let slotDir: string;
const children: ChildProcess[] = [];

beforeEach(async () => {
  home = await mkdtemp(join(tmpdir(), "mediagate-slot-lock-"));
  slotDir = join(home, "sandboxes", "docker", "default");
});
afterEach(async () => {
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await rm(home, { recursive: true, force: true });
});

describe("the slot lock across processes", () => {
  it("waits for a live holder in another process, and fails with a clear error past its bound", async () => {
    children.push(await holdInOtherProcess(slotDir));
    await expect(withSlotLock(slotDir, async () => "ran", { waitMs: 300 })).rejects.toThrow(
      /slot directory .*default is locked by another process \(waited 300 ms\)/,
    );
  });

  it("takes over at once a lock whose holder was killed, well before the lock goes stale", async () => {
    const holder = await holdInOtherProcess(slotDir);
    holder.kill("SIGKILL");
    await once(holder, "exit");
    // The killed holder refreshed its lock moments ago: waiting for staleness (20 s) would
    // exceed this bound and fail.
    await expect(withSlotLock(slotDir, async () => "ran", { waitMs: 2_000 })).resolves.toBe("ran");
  });

  it("takes over a lock left without its owner record (its holder killed while making it) after unrecordedMs", async () => {
    const locks = join(home, "sandboxes", "locks", "docker");
    await mkdir(join(locks, "default.lock"), { recursive: true });
    // A record of an older lock directory is no record of this one.
    await writeFile(
      join(locks, "default.lock.owner"),
      JSON.stringify({ instance: "vm/boot/1/1", lock: "1:0" }),
    );
    // The lock was made just now, so it goes stale only in 20 s: past this bound.
    const warnings: string[] = [];
    const options = {
      waitMs: 2_000,
      unrecordedMs: 200,
      onWarning: (m: string) => warnings.push(m),
    };
    await expect(withSlotLock(slotDir, async () => "ran", options)).resolves.toBe("ran");
    expect(await readdir(locks)).toEqual([]);
    expect(warnings).toEqual([
      expect.stringMatching(
        /^took over the lock of slot directory .*default: it had no owner record for 200 ms/,
      ),
    ]);
  });

  it("leaves a lock without its owner record to its holder for unrecordedMs", async () => {
    const locks = join(home, "sandboxes", "locks", "docker");
    await mkdir(join(locks, "default.lock"), { recursive: true });
    await expect(
      withSlotLock(slotDir, async () => "ran", { waitMs: 300, unrecordedMs: 10_000 }),
    ).rejects.toThrow(/is locked by another process \(waited 300 ms\)/);
    expect(await readdir(locks)).toEqual(["default.lock"]);
  });

  it("leaves neither the lock nor its owner record behind once released", async () => {
    await withSlotLock(slotDir, async () => {
      expect(await readdir(join(home, "sandboxes", "locks", "docker"))).toEqual([
        "default.lock",
        "default.lock.owner",
      ]);
    });
    expect(await readdir(join(home, "sandboxes", "locks", "docker"))).toEqual([]);
  });
});
