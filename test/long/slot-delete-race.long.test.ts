import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { connectDocker, Defaults, Sandbox, type SandboxSettings } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../test-support/engine.js";
import {
  type AttackBench,
  attackBench,
  loopDevicesUnder,
  releaseMounts,
  removeContainers,
  SlotModes,
  TestImage,
  VictimFiles,
} from "./slot-attack.js";

/**
 * Issue 8, case 1, as reported: a user of profile B fills the shared /workspace with
 * directory/symlink pairs pointing at a host directory and swaps them while profile A's admin
 * resets the slot, and B's users (another Sandbox of this process, another process) keep
 * running a command that re-creates the container on the directory being deleted. On the old
 * code (a host-side path walk; one lock per profile and none across processes) the host
 * directory lost all its entries in the first resets; now a slot is never provisioned while
 * it is deleted, and the delete never walks a host path.
 */

const here = dirname(fileURLToPath(import.meta.url));
/** Resets per mode (each ~5 s here); the old code lost the host files within 1–5 resets. */
const Resets = 10;

let bench: AttackBench;
beforeAll(async () => {
  bench = await attackBench();
});
afterAll(async () => {
  await bench?.dispose();
});

describe.each(SlotModes)("resetting $mode", ({ diskLimitBytes }) => {
  it("never removes a host file while another profile and another process keep re-creating the slot", async () => {
    const home = await mkdtemp(join(tmpdir(), "mg-race-home-"));
    const suffix = randomBytes(4).toString("hex");
    const profiles = [`race-a-${suffix}`, `race-b-${suffix}`, `race-c-${suffix}`] as const;
    const slot = `shared:race-${suffix}`;
    const settings: Partial<SandboxSettings> = {
      image: TestImage,
      orphanReaper: false,
      volumes: [`${bench.helperDir}:/opt/race:ro`],
      nanoCpus: 500_000_000,
      diskLimitBytes,
    };
    // The attackers make a fresh container whenever theirs went away (no probe by name), so
    // on the old code one appeared right after the reset had listed the slot's containers.
    const attackers = { ...settings, persistAcrossProcesses: false };
    const sandboxOf = (profile: string, own: Partial<SandboxSettings>) =>
      new Sandbox({
        engine: connectDocker({ host: testDockerHost() }),
        profile,
        profileHome: join(home, "profiles", profile),
        rootHome: home,
        settings: { ...Defaults.settings, ...own } as SandboxSettings,
      });
    const a = sandboxOf(profiles[0], settings);
    const b = sandboxOf(profiles[1], attackers);
    const attack = bench.swapInBackground;
    const other = spawnAttacker(profiles[2], home, slot, attackers, attack);
    let stopping = false;
    let bRuns = 0;
    const bLoop = (async () => {
      while (!stopping) {
        await b.exec(slot, attack, { timeoutMs: 20_000 }).then(
          () => bRuns++,
          () => undefined,
        );
      }
    })();
    const left: number[] = [];
    let unusable = 0;
    let leftBehind: string[] = [];
    try {
      await other.ready;
      for (let reset = 0; reset < Resets; reset++) {
        if (!(await plant(a, slot, `${bench.fill} && ${attack}`))) unusable++;
        // What the reset reports is not the point here: only the host directory is.
        await a.cleanup(slot, { force: true, deleteDirs: true }).catch(() => undefined);
        left.push(await bench.victimFiles());
      }
    } finally {
      stopping = true;
      await bLoop;
      const counts = await other.stop();
      await a.cleanup(slot, { force: true, deleteDirs: true }).catch(() => undefined);
      await a.shutdown();
      await b.shutdown();
      await removeContainers(profiles);
      leftBehind = [...(await releaseMounts(home)), ...loopDevicesUnder(home)];
      await rm(home, { recursive: true, force: true });
      console.log(
        `${Resets} resets; host files left after each: ${JSON.stringify(left)}; ` +
          `resets whose container A could not use: ${unusable}; ` +
          `B ran ${bRuns} commands, the other process ${counts}`,
      );
    }
    expect(leftBehind).toEqual([]);
    expect(left).toEqual(Array.from({ length: Resets }, () => VictimFiles));
    expect(unusable).toBe(0);
  });
});

/**
 * Makes the attacker's pairs through profile A and starts it swapping them; false when the
 * container A got cannot run commands in /workspace (on the old code: a container made while
 * the slot was being deleted, bound to a directory that is gone). A run that met a container
 * another attacker's turn was replacing is tried again.
 */
async function plant(sandbox: Sandbox, slot: string, command: string): Promise<boolean> {
  for (let attempt = 1; attempt <= 5; attempt++) {
    const result = await sandbox.exec(slot, command, { timeoutMs: 60_000 }).catch(() => undefined);
    if (result?.exitCode === 0) return true;
  }
  return false;
}

interface Attacker {
  readonly ready: Promise<void>;
  /** Closes its stdin and resolves with the counts it printed last. */
  stop(): Promise<string>;
}

/** The other gateway process: runs the attack in the slot over and over (fixtures/attack-loop.mjs). */
function spawnAttacker(
  profile: string,
  home: string,
  slot: string,
  settings: Partial<SandboxSettings>,
  command: string,
): Attacker {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [
    join(here, "fixtures/attack-loop.mjs"),
    profile,
    home,
    slot,
    JSON.stringify(settings),
    command,
  ]);
  let out = "";
  const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout.on("data", (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes("ready\n")) resolve();
    });
    child.on("exit", (code) => reject(new Error(`attacker exited early (${code})`)));
  });
  child.stderr.on("data", (chunk: Buffer) => process.stderr.write(chunk));
  return {
    ready,
    async stop() {
      child.stdin.end();
      await exited;
      return out.trim().split("\n").at(-1) ?? "";
    },
  };
}
