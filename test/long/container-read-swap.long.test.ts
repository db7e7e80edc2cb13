import { randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { join } from "node:path";
import { planMedia, telegramLimits } from "@mediagate/media";
import { connectDocker, Defaults, Sandbox } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../test-support/engine.js";
import { DockerObserver } from "../e2e/harness/docker-observer.js";
import { createTempHome, TestImage, uniqueProfileName } from "../e2e/harness/gateway-home.js";

/**
 * Case 6 of the sandbox-boundary issue: a loop inside the container swaps `/tmp/d` between a
 * directory holding a harmless `id_rsa` and a symlink to `/root/.ssh`, while the gateway reads
 * `/tmp/d/id_rsa` out of the container (the media fallback for a file on no host mount). A read
 * may see the directory (the decoy is fine to deliver) or the link (the answer must name the real
 * path, which the credential policy then refuses); it must never return the key's bytes.
 * 1,000 reads of the swapped path: 800 through `Sandbox#readFile`, 200 through whole media plans.
 */
const Attempts = 800;
const PlanAttempts = 200;
const Slot = "default";
/** Reads in flight at once: each is a `docker exec`, so the engine overlaps them. */
const Parallel = 8;

describe("the container-read fallback against a directory/symlink swapping loop", () => {
  const profile = uniqueProfileName("long-swap");
  const secret = `PROTECTED-KEY-${randomBytes(8).toString("hex")}`;
  const loop = new AbortController();
  let home = "";
  let sandbox: Sandbox;
  let swapping: Promise<unknown> = Promise.resolve();

  beforeAll(async () => {
    home = await createTempHome("long-swap");
    sandbox = new Sandbox({
      engine: connectDocker({ host: testDockerHost() }),
      profile,
      profileHome: home,
      rootHome: home,
      settings: { ...Defaults.settings, image: TestImage },
    });
    const setup = await sandbox.exec(
      Slot,
      `mkdir -p /root/.ssh /tmp/d && printf %s '${secret}' > /root/.ssh/id_rsa && printf decoy > /tmp/d/id_rsa && ln -s /root/.ssh /tmp/lnk`,
    );
    expect(setup.exitCode).toBe(0);
    // Each step is one rename(2), so /tmp/d is a directory or the link nearly all the time. The
    // loop runs at the lowest priority so its forks leave the machine's CPU to the reads.
    swapping = sandbox.exec(
      Slot,
      "renice -n 19 -p $$ >/dev/null; while :; do mv /tmp/d /tmp/real; mv /tmp/lnk /tmp/d; mv /tmp/d /tmp/lnk; mv /tmp/real /tmp/d; done",
      { signal: loop.signal, timeoutMs: 600_000 },
    );
  });

  afterAll(async () => {
    loop.abort();
    await swapping.catch(() => undefined);
    // Removes the container and deletes the slot's files (unmounting its disk image).
    await sandbox.cleanup(Slot, { force: true, deleteDirs: true });
    await sandbox.shutdown(5_000);
    const docker = new DockerObserver();
    for (const c of await docker.profileContainers(profile)) await docker.removeForce(c.id);
    if (home !== "") await rm(home, { recursive: true, force: true });
  });

  it(`never returns the protected file's bytes through Sandbox#readFile (${Attempts} reads)`, async () => {
    const seen = { decoy: 0, link: 0, missing: 0, failed: 0, protected: 0, other: 0 };
    await inParallel(Attempts, async () => {
      const answer = await sandbox.readFile(Slot, "/tmp/d/id_rsa", 1024).catch(() => undefined);
      if (answer === undefined) seen.missing += 1;
      else if ("linkTarget" in answer) seen.link += 1;
      else {
        const text = await streamText(answer.stream).catch(() => undefined);
        if (text === undefined) seen.failed += 1;
        else if (text === "decoy") seen.decoy += 1;
        else if (text.includes(secret)) seen.protected += 1;
        else seen.other += 1;
      }
    });
    console.log(`readFile outcomes over ${Attempts} reads: ${JSON.stringify(seen)}`);
    // The loop really swapped under the reads: both shapes of /tmp/d were met.
    expect(seen.decoy).toBeGreaterThan(0);
    expect(seen.link).toBeGreaterThan(0);
    expect(seen.protected).toBe(0);
  });

  it(`never plans the protected file for delivery through the media fallback (${PlanAttempts} replies)`, async () => {
    const limits = telegramLimits();
    const ctx = {
      backend: "docker" as const,
      slotDirs: [sandbox.slotDirectory(Slot)],
      volumes: [],
      allowDirs: [],
      protectedHomes: [home],
      container: {
        read: (path: string, maxBytes: number) => sandbox.readFile(Slot, path, maxBytes),
      },
      tmpDir: join(home, "tmp"),
    };
    const seen = { ready: 0, denied: 0, unreachable: 0, protected: 0 };
    await inParallel(PlanAttempts, async () => {
      const plan = await planMedia("here\nMEDIA:/tmp/d/id_rsa", ctx, limits);
      try {
        for (const outcome of plan.outcomes) {
          if (outcome.status === "denied") seen.denied += 1;
          if (outcome.status === "unreachable") seen.unreachable += 1;
        }
        for (const ready of plan.ready()) {
          seen.ready += 1;
          if ((await ready.file.read()).toString().includes(secret)) seen.protected += 1;
        }
      } finally {
        await plan.dispose();
      }
    });
    console.log(`planMedia outcomes over ${PlanAttempts} replies: ${JSON.stringify(seen)}`);
    expect(seen.ready).toBeGreaterThan(0);
    expect(seen.protected).toBe(0);
  });
});

/** Runs `attempt` `times` times, {@link Parallel} at once. */
async function inParallel(times: number, attempt: () => Promise<void>): Promise<void> {
  let started = 0;
  const worker = async () => {
    while (started < times) {
      started += 1;
      await attempt();
    }
  };
  await Promise.all(Array.from({ length: Parallel }, worker));
}

async function streamText(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(Buffer.from(chunk as Buffer));
  return Buffer.concat(chunks).toString();
}
