import { mkdir, readFile, rename, rm, symlink, unlink } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { telegramLimits } from "../src/limits.js";
import { openInsideRoot } from "../src/open-file.js";
import { planMediaWithHooks } from "../src/plan.js";
import { createPolicy } from "../src/policy.js";
import type { MediaPlan } from "../src/types.js";
import { layout, put, tempDir } from "./helpers.js";

const policy = createPolicy({ allowDirs: [], protectedHomes: [], homes: [] });
const plans: MediaPlan[] = [];
afterEach(async () => {
  for (const plan of plans.splice(0)) await plan.dispose();
});

describe("check-then-upload race", () => {
  it("keeps sending the checked file after it is swapped for a symlink to a secret", async () => {
    const l = await layout();
    const secret = await put(path.join(l.outside, "secret.txt"), "SECRET");
    const file = await put(path.join(l.profile, "workspace/report.txt"), "REPORT");
    const plan = await planMediaWithHooks(
      "MEDIA:/workspace/report.txt",
      l.ctx,
      telegramLimits(),
      {},
    );
    plans.push(plan);
    await unlink(file);
    await symlink(secret, file);
    expect(await readFile(file, "utf8")).toBe("SECRET");
    const ready = plan.ready()[0]!;
    expect((await ready.file.read()).toString()).toBe("REPORT");
    const chunks: Buffer[] = [];
    for await (const chunk of ready.file.stream()) chunks.push(chunk as Buffer);
    expect(Buffer.concat(chunks).toString()).toBe("REPORT");
  });

  it("refuses a file swapped for a symlink between the check and the open", async () => {
    const l = await layout();
    const secret = await put(path.join(l.outside, "secret.txt"), "SECRET");
    const file = await put(path.join(l.profile, "workspace/report.txt"), "REPORT");
    const plan = await planMediaWithHooks("MEDIA:/workspace/report.txt", l.ctx, telegramLimits(), {
      async beforeOpen(realPath) {
        expect(realPath).toBe(file);
        await unlink(file);
        await symlink(secret, file);
      },
    });
    plans.push(plan);
    expect(plan.ready()).toEqual([]);
    expect(plan.outcomes[0]).toMatchObject({ status: "denied" });
    expect(plan.outcomes[0]!.candidates.map((c) => c.result)).toEqual([
      "missing",
      "escapes_root",
      "missing",
    ]);
  });

  it("refuses a parent directory swapped for a symlink out of the root before the open", async () => {
    const root = await tempDir();
    const inside = path.join(root, "ws");
    const outside = path.join(root, "outside");
    await put(path.join(inside, "dir/file.txt"), "INSIDE");
    await put(path.join(outside, "file.txt"), "OUTSIDE");
    const result = await openInsideRoot(path.join(inside, "dir/file.txt"), inside, policy, {
      async beforeOpen() {
        await rename(path.join(inside, "dir"), path.join(root, "moved"));
        await symlink(outside, path.join(inside, "dir"));
      },
    });
    expect(result).toMatchObject({ result: "escapes_root" });
    if (result.result === "ok") await result.file.close();
  });

  it("refuses a file replaced by a directory before the open", async () => {
    const root = await tempDir();
    const file = await put(path.join(root, "f.txt"), "x");
    const result = await openInsideRoot(file, root, policy, {
      async beforeOpen() {
        await rm(file);
        await mkdir(file);
      },
    });
    expect(result).toMatchObject({ result: "not_regular" });
  });

  it("opens an untouched file and serves only the size it checked", async () => {
    const root = await tempDir();
    const file = await put(path.join(root, "grow.txt"), "12345");
    const result = await openInsideRoot(file, root, policy);
    if (result.result !== "ok") throw new Error(result.result);
    await put(file, "1234567890");
    expect((await result.file.read()).toString()).toBe("12345");
    await result.file.close();
  });
});
