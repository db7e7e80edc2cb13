import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectDocker, Defaults, maxOpenShellsOf, Sandbox } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../test-support/engine.js";
import { DockerObserver } from "../e2e/harness/docker-observer.js";
import { TestImage } from "../e2e/harness/gateway-home.js";

/**
 * Issue 9: every session kept its own shell (a process in the container) for 10 minutes, so
 * from about the 250th session on one persistent profile the container's pids limit (512)
 * was full and new sessions failed. Now at most `maxOpenShells` are open per container
 * (`maxOpenShellsOf` the default settings: a share of the pids limit).
 */

const Sessions = 1_000;
/** Sessions running a command at the same time (a busy gateway). */
const Concurrency = 8;

const docker = new DockerObserver();

/**
 * Session shells (`sh` processes a `docker exec` started: ppid 0) and all processes (what the
 * pids limit counts) in the container, from one `ps`.
 */
async function census(containerId: string): Promise<{ shells: number; processes: number }> {
  const ps = await docker.exec(containerId, ["ps", "-o", "ppid,args"]);
  const lines = ps.stdout.split("\n").slice(1).filter(Boolean);
  return {
    shells: lines.filter((line) => /^\s*0\s+sh\s*$/.test(line)).length,
    processes: lines.length,
  };
}

let home = "";
let sandbox: Sandbox;
const profile = `thousand-${randomBytes(4).toString("hex")}`;
beforeAll(async () => {
  home = await mkdtemp(join(tmpdir(), "mg-thousand-"));
  sandbox = new Sandbox({
    engine: connectDocker({ host: testDockerHost() }),
    profile,
    profileHome: join(home, "profiles", profile),
    rootHome: home,
    settings: { ...Defaults.settings, image: TestImage, diskLimitBytes: 0, orphanReaper: false },
  });
});
afterAll(async () => {
  await sandbox.shutdown();
  for (const c of await docker.profileContainers(profile)) await docker.removeForce(c.id);
  await rm(home, { recursive: true, force: true });
});

const sessionKey = (i: number) => `agent:${profile}:console:dm:${i}`;

describe("1,000 sessions on one persistent profile", () => {
  it("all run their command, open shells never exceed maxOpenShells, closed sessions keep their state", async () => {
    const slot = "default";
    const cap = maxOpenShellsOf(Defaults.settings);
    const { containerId } = await sandbox.acquire(slot);
    let mostShells = 0;
    let mostProcesses = 0;
    const samples: Promise<void>[] = [];
    /** Counts shells and processes while the sessions run (every 20th session starts one). */
    const sample = () =>
      samples.push(
        census(containerId).then(({ shells, processes }) => {
          mostShells = Math.max(mostShells, shells);
          mostProcesses = Math.max(mostProcesses, processes);
        }),
      );
    const failures: string[] = [];
    let next = 0;
    const started = performance.now();
    const workers = Array.from({ length: Concurrency }, async () => {
      for (let i = next++; i < Sessions; i = next++) {
        if (i % 20 === 0) sample();
        const result = await sandbox
          .run(slot, sessionKey(i), `cd /tmp && export N=${i} && echo ${i}`)
          .catch((error: unknown) => ({ exitCode: -2, stdout: String(error), stderr: "" }));
        if (result.exitCode !== 0 || result.stdout !== `${i}\n`) {
          failures.push(`session ${i}: ${result.exitCode} ${result.stdout}${result.stderr}`);
        }
      }
    });
    await Promise.all(workers);
    const totalMs = performance.now() - started;
    await Promise.all(samples);
    console.info(
      `${Sessions} sessions (${Concurrency} at a time): ${(totalMs / 1000).toFixed(1)} s, ` +
        `${(totalMs / Sessions).toFixed(1)} ms per session; at most ${mostShells} open shells ` +
        `and ${mostProcesses} processes seen (cap ${cap}, pids limit ${Defaults.settings.pidsLimit})`,
    );

    expect(failures.slice(0, 5)).toEqual([]);
    expect(mostShells).toBeLessThanOrEqual(cap);
    // Sessions with a shell and those that ran without one (the cap was full) keep cwd and exports.
    for (const i of [0, 1, 2, Sessions / 2]) {
      const again = await sandbox.run(slot, sessionKey(i), 'pwd; echo "$N"');
      expect(again.stdout).toBe(`/tmp\n${i}\n`);
    }
    expect((await census(containerId)).shells).toBeLessThanOrEqual(cap);
  });
});
