import { randomBytes } from "node:crypto";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  connectDocker,
  Defaults,
  ImageMissingError,
  type ImagePullProgress,
  Sandbox,
} from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../test-support/engine.js";
import { FakeRegistry } from "../fakes/registry/index.js";
import { runCli } from "./harness/cli.js";
import { DockerObserver } from "./harness/docker-observer.js";
import { createTempHome, TestImage, uniqueProfileName } from "./harness/gateway-home.js";

/**
 * Pulling a missing sandbox image for real: the engine pulls from a local registry (the fake
 * serves the busybox test image plus one layer of its own, so every image is new to the engine
 * and one layer is really downloaded). No other registry is reachable here; the failure path
 * without any registry is tested in packages/sandbox.
 */
/** The test run's engine (`DOCKER_HOST` when set), the one the observer looks at. */
function testEngine() {
  return connectDocker({ host: testDockerHost() });
}

describe("pulling a missing sandbox image from a registry", () => {
  const observer = new DockerObserver();
  const run = randomBytes(4).toString("hex");
  const pulled: string[] = [];
  let registry: FakeRegistry;
  let archive: Buffer;
  let dir = "";

  beforeAll(async () => {
    registry = await FakeRegistry.start();
    archive = await observer.imageArchive(TestImage);
    dir = await createTempHome("image-pull");
  });
  afterAll(async () => {
    await registry?.close();
    for (const ref of pulled) await observer.removeImage(ref);
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  /** A new image on the registry, absent from the engine (removed again after the file). */
  async function served(tag: string, uniqueLayerBytes?: number) {
    const added = await registry.addImage(`mediagate-pull-${run}`, tag, archive, {
      uniqueLayerBytes,
    });
    pulled.push(added.ref);
    expect(await observer.hasImage(added.ref)).toBe(false);
    return added;
  }

  it("pulls with progress: the start, the download, every layer finished, the end", async () => {
    const { ref, uniqueLayerBytes } = await served("progress", 2_000_000);
    const seen: ImagePullProgress[] = [];
    await testEngine().pullImage(ref, { onProgress: (p) => seen.push(p) });
    expect(await observer.hasImage(ref)).toBe(true);
    expect(seen[0]?.status).toMatch(/^Pulling from /);
    const downloads = seen.filter((p) => p.status === "Downloading");
    expect(downloads.map((p) => p.totalBytes)).toContain(uniqueLayerBytes);
    const last = seen.at(-1);
    expect(last?.status).toBe(`Status: Downloaded newer image for ${ref}`);
    expect(last?.layers).toBeGreaterThan(0);
    expect(last?.layersDone).toBe(last?.layers);
    expect(last?.text).toBe(
      `pulling ${ref}: Status: Downloaded newer image for ${ref} (${last?.layers}/${last?.layers} layers)`,
    );
  });

  it("a sandbox pulls its missing image before the first container and runs in it", async () => {
    const { ref } = await served("sandbox");
    const profile = uniqueProfileName("pull");
    const seen: ImagePullProgress[] = [];
    const sandbox = new Sandbox({
      engine: testEngine(),
      profile,
      profileHome: dir,
      rootHome: dir,
      settings: {
        ...Defaults.settings,
        image: ref,
        persistent: false,
        diskLimitBytes: 0,
        orphanReaper: false,
      },
      onPullProgress: (p) => seen.push(p),
    });
    try {
      const result = await sandbox.exec("default", "echo pulled-and-running");
      expect(result.stdout).toBe("pulled-and-running\n");
      expect(seen.at(-1)?.status).toBe(`Status: Downloaded newer image for ${ref}`);
      const [container] = await observer.profileContainers(profile);
      expect(container?.state).toBe("running");
    } finally {
      await sandbox.cleanup("default", { force: true });
      await sandbox.shutdown();
      for (const c of await observer.profileContainers(profile)) await observer.removeForce(c.id);
    }
  });

  it("gives up a pull that stalls, and the engine keeps no half image", async () => {
    const { ref } = await served("stalled");
    registry.stallTopLayer(`mediagate-pull-${run}`, "stalled");
    const error = await testEngine()
      .pullImage(ref, { stallTimeoutMs: 500 })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageMissingError);
    expect((error as ImageMissingError).pullFailure).toBe(
      "the pull got no answer or progress from the engine for 500 ms",
    );
    expect((error as Error).message).toContain(`docker pull ${ref}`);
    expect(await observer.hasImage(ref)).toBe(false);
  });

  it("doctor says the engine can pull the image; start pulls it and logs the progress at info", async () => {
    const { ref } = await served("cli");
    const file = join(dir, "pull.yaml");
    await writeFile(
      file,
      `home: ${join(dir, "home")}\nprofiles:\n  - name: default\n    sandbox: { image: "${ref}" }\n`,
    );
    const doctor = await runCli(["doctor", "--config", file], { home: dir });
    expect(doctor.stdout).toContain(
      `✔ image: ${ref} not on the Docker host yet; the engine can pull it, and mediagate start will\n`,
    );
    expect(await observer.hasImage(ref)).toBe(false);

    const start = await runCli(["start", "--config", file], {
      home: dir,
      env: { LOG_LEVEL: "info" },
    });
    expect(start.code, start.output).toBe(0);
    expect(await observer.hasImage(ref)).toBe(true);
    expect(start.stderr).toContain(`pulling ${ref}: Status: Downloaded newer image for ${ref}`);
  });
});
