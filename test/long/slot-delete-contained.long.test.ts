import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectDocker, Defaults, Sandbox, type SandboxSettings } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../test-support/engine.js";
import {
  type AttackBench,
  attackBench,
  docker,
  loopDevicesUnder,
  releaseMounts,
  removeContainers,
  SlotModes,
  TestImage,
  VictimFiles,
} from "./slot-attack.js";

/**
 * Issue 8, case 1, the delete itself: whatever a container does during the delete, nothing
 * outside the slot directory is touched. Here the swapping container is one the gateway's
 * lock and labels know nothing of (started with the plain engine API on the slot's
 * workspace), so it keeps swapping directories for links to a host directory during the
 * whole delete. The old host-side `rm` lost every host file on the first delete; the
 * unmount-and-unlink (disk ceiling) and the delete container (no ceiling) lose none.
 */

/** Deletes per mode; each one runs entirely under a live swapper. */
const Deletes = 4;

let bench: AttackBench;
beforeAll(async () => {
  bench = await attackBench();
});
afterAll(async () => {
  await bench?.dispose();
});

describe.each(SlotModes)("deleting $mode", ({ diskLimitBytes }) => {
  it("never removes a host file while a container swaps directories for host links throughout", async () => {
    const home = await mkdtemp(join(tmpdir(), "mg-race-home-"));
    const profile = `race-${randomBytes(4).toString("hex")}`;
    const slot = "session:race";
    const sandbox = new Sandbox({
      engine: connectDocker({ host: testDockerHost() }),
      profile,
      profileHome: join(home, "profiles", profile),
      rootHome: home,
      settings: {
        ...Defaults.settings,
        image: TestImage,
        orphanReaper: false,
        volumes: [`${bench.helperDir}:/opt/race:ro`],
        diskLimitBytes,
      } as SandboxSettings,
    });
    const workspace = join(sandbox.slotDirectory(slot), "workspace");
    const left: number[] = [];
    const outcomes: string[] = [];
    let leftBehind: string[] = [];
    try {
      for (let round = 0; round < Deletes; round++) {
        const filled = await sandbox.exec(slot, bench.fill, { timeoutMs: 60_000 });
        expect(filled.exitCode).toBe(0);
        const swapper = startSwapper(profile, workspace, bench);
        try {
          await sandbox.cleanup(slot, { force: true, deleteDirs: true }).then(
            () => outcomes.push("deleted"),
            (error: unknown) => outcomes.push(`kept: ${String(error).slice(-160)}`),
          );
          left.push(await bench.victimFiles());
        } finally {
          await docker.removeForce(swapper);
        }
        // With the swapper gone, a delete that was refused goes through.
        await sandbox.cleanup(slot, { force: true, deleteDirs: true });
      }
    } finally {
      await sandbox.shutdown();
      await removeContainers([profile]);
      leftBehind = [...(await releaseMounts(home)), ...loopDevicesUnder(home)];
      await rm(home, { recursive: true, force: true });
      console.log(
        `${Deletes} deletes under a live swapper; host files left after each: ` +
          `${JSON.stringify(left)}; outcomes: ${JSON.stringify(outcomes)}`,
      );
    }
    expect(leftBehind).toEqual([]);
    expect(left).toEqual(Array.from({ length: Deletes }, () => VictimFiles));
  });
});

/**
 * A container outside the gateway (no mediagate.agent label: cleanup does not stop it) that
 * binds the slot's workspace and swaps the attacker's pairs as its main process.
 */
function startSwapper(profile: string, workspace: string, bench: AttackBench): string {
  const id = execFileSync(
    "docker",
    [
      "run",
      "-d",
      "--label",
      `mediagate.profile=${profile}`,
      "--network",
      "none",
      "--cap-drop",
      "ALL",
      "-v",
      `${workspace}:/workspace`,
      "-v",
      `${bench.helperDir}:/opt/race:ro`,
      "-w",
      "/workspace",
      TestImage,
      ...bench.swapArgv,
    ],
    { encoding: "utf8" },
  );
  return id.trim();
}
