import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { TestImage } from "../e2e/harness/gateway-home.js";
import { removeStaleBuilds, untaggedImages } from "./images.js";

const run = promisify(execFile);

/**
 * The long suite's clean-up of earlier gateway image builds (images.ts), on throw-away images
 * of this run's own labels: the builds of two stages are imitated by tagging a newer image with
 * the older one's tag, which is what leaves the older one untagged.
 */
describe("removing what earlier image builds left untagged", () => {
  const run_ = randomUUID().slice(0, 8);
  const labels = {
    stage: `mediagate.test-image=${run_}-build`,
    image: `mediagate.test-image=${run_}`,
  };
  const tags = {
    stage: `mediagate-test-stage:${run_}`,
    image: `mediagate-test-image:${run_}`,
    other: `mediagate-test-other:${run_}`,
  };
  const made: string[] = [];
  let work = "";

  /** A one-layer image of `label` (or none) tagged `tag`, told apart by a fresh nonce. */
  async function build(tag: string, label: string | undefined): Promise<string> {
    work ||= await mkdtemp(join(tmpdir(), "mg-images-"));
    const lines = [`FROM ${TestImage}`, `LABEL mediagate.test-nonce=${randomUUID()}`];
    if (label !== undefined) lines.push(`LABEL ${label}`);
    await writeFile(join(work, "Dockerfile"), `${lines.join("\n")}\n`);
    const { stdout } = await run("docker", ["build", "--quiet", "--tag", tag, work]);
    const id = stdout.trim();
    made.push(id);
    return id;
  }

  async function exists(id: string): Promise<boolean> {
    return run("docker", ["image", "inspect", id]).then(
      () => true,
      () => false,
    );
  }

  afterAll(async () => {
    for (const id of made.reverse()) await run("docker", ["rmi", "--force", id]).catch(() => {});
    if (work !== "") await rm(work, { recursive: true, force: true });
  });

  it("removes the older build stages and images, keeps the newest stage, touches nothing else", async () => {
    const oldestStage = await build(tags.stage, labels.stage);
    const newestUntaggedStage = await build(tags.stage, labels.stage);
    const taggedStage = await build(tags.stage, labels.stage);
    const oldImage = await build(tags.image, labels.image);
    const image = await build(tags.image, labels.image);
    const otherUntagged = await build(tags.other, undefined);
    await build(tags.other, undefined);

    expect(await untaggedImages(labels.stage)).toEqual([newestUntaggedStage, oldestStage]);
    expect(await untaggedImages(labels.image)).toEqual([oldImage]);

    const outcome = await removeStaleBuilds(labels);

    expect(outcome).toEqual({
      removed: [oldestStage, oldImage],
      kept: newestUntaggedStage,
      problems: [],
    });
    expect(await exists(oldestStage)).toBe(false);
    expect(await exists(oldImage)).toBe(false);
    for (const id of [newestUntaggedStage, taggedStage, image, otherUntagged]) {
      expect(await exists(id)).toBe(true);
    }
    expect(await removeStaleBuilds(labels)).toEqual({
      removed: [],
      kept: newestUntaggedStage,
      problems: [],
    });
  });
});
