import { createReadStream } from "node:fs";
import { readdir, stat } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { discordLimits, telegramLimits } from "../src/limits.js";
import { planMedia } from "../src/plan.js";
import type { ContainerFileSource, MediaPlan, TranslateContext } from "../src/types.js";
import { Bytes, layout, link, put, tempDir } from "./helpers.js";

/** A container file system on disk, read the way the archive API would serve it. */
function directorySource(root: string, calls: string[]): ContainerFileSource {
  return {
    async read(containerPath) {
      calls.push(containerPath);
      try {
        const file = path.join(root, containerPath);
        const info = await stat(file);
        return info.isFile() ? { size: info.size, stream: createReadStream(file) } : undefined;
      } catch {
        return undefined;
      }
    },
  };
}

const plans: MediaPlan[] = [];
afterEach(async () => {
  for (const plan of plans.splice(0)) await plan.dispose();
});

async function withContainer(extra: Partial<TranslateContext> = {}) {
  const l = await layout();
  const containerRoot = await tempDir();
  const calls: string[] = [];
  const ctx: TranslateContext = {
    ...l.ctx,
    container: directorySource(containerRoot, calls),
    ...extra,
  };
  return { l, containerRoot, calls, ctx };
}

describe("archive fallback", () => {
  it("reads a file on no mount from the container into an unlinked spool", async () => {
    const { containerRoot, calls, ctx } = await withContainer();
    await put(path.join(containerRoot, "tmp/chart.png"), Bytes.png);
    const plan = await planMedia("MEDIA:/tmp/chart.png", ctx, telegramLimits());
    plans.push(plan);
    expect(calls).toEqual(["/tmp/chart.png"]);
    const ready = plan.ready()[0]!;
    expect(ready).toMatchObject({ kind: "photo", filename: "chart.png", size: Bytes.png.length });
    expect(ready.candidates.at(-1)).toMatchObject({ source: "container", result: "ok" });
    expect(await readdir(ctx.tmpDir)).toEqual([]);
    expect(await ready.file.read()).toEqual(Bytes.png);
    expect(await ready.file.read()).toEqual(Bytes.png);
    expect(plan.text).toBe("");
  });

  it("creates a missing spool directory owner-only", async () => {
    const { containerRoot, ctx } = await withContainer();
    const tmpDir = path.join(ctx.tmpDir, "nested/spool");
    await put(path.join(containerRoot, "tmp/a.txt"), "a");
    const plan = await planMedia("MEDIA:/tmp/a.txt", { ...ctx, tmpDir }, telegramLimits());
    plans.push(plan);
    expect(plan.ready()).toHaveLength(1);
    expect((await stat(tmpDir)).mode & 0o777).toBe(0o700);
    expect(await readdir(tmpDir)).toEqual([]);
  });

  it("also reads a /workspace file the host layouts lack (tmpfs workspace)", async () => {
    const { containerRoot, ctx } = await withContainer();
    await put(path.join(containerRoot, "workspace/t.txt"), "tmpfs");
    const plan = await planMedia("MEDIA:/workspace/t.txt", ctx, telegramLimits());
    plans.push(plan);
    expect((await plan.ready()[0]!.file.read()).toString()).toBe("tmpfs");
  });

  it("reports too_large from the announced size without reading the stream", async () => {
    let read = false;
    const l = await layout();
    const stream = new Readable({
      read() {
        read = true;
        this.push(null);
      },
    });
    const ctx = { ...l.ctx, container: { read: async () => ({ size: 5000, stream }) } };
    const plan = await planMedia("MEDIA:/tmp/big.mp4", ctx, discordLimits({ maxBytes: 1000 }));
    expect(plan.outcomes[0]).toMatchObject({
      status: "too_large",
      size: 5000,
      limit: 1000,
      kind: "video",
    });
    expect(read).toBe(false);
  });

  it("caps the bytes it receives when the announced size lies", async () => {
    const l = await layout();
    const ctx = {
      ...l.ctx,
      container: {
        read: async () => ({
          size: 10,
          stream: Readable.from([Buffer.alloc(800), Buffer.alloc(800)]),
        }),
      },
    };
    const plan = await planMedia("MEDIA:/tmp/x.bin", ctx, discordLimits({ maxBytes: 1000 }));
    expect(plan.outcomes[0]).toMatchObject({ status: "too_large", size: 1600, limit: 1000 });
    expect(await readdir(ctx.tmpDir)).toEqual([]);
  });

  it("keeps a file missing in the container unreachable, and survives a failing source", async () => {
    const { ctx } = await withContainer();
    const missing = await planMedia("MEDIA:/tmp/none.png", ctx, telegramLimits());
    expect(missing.outcomes[0]).toMatchObject({ status: "unreachable" });
    expect(missing.outcomes[0]!.candidates.at(-1)).toMatchObject({
      source: "container",
      result: "missing",
    });
    expect(missing.text).toBe("MEDIA:/tmp/none.png");
    const failing = {
      ...ctx,
      container: {
        read: async () => {
          throw new Error("container gone");
        },
      },
    };
    const failed = await planMedia("MEDIA:/tmp/none.png", failing, telegramLimits());
    expect(failed.outcomes[0]!.candidates.at(-1)).toMatchObject({
      result: "error",
      detail: "container gone",
    });
  });

  it("applies the deny list to the container path and never asks for it", async () => {
    const { containerRoot, calls, ctx } = await withContainer();
    await put(path.join(containerRoot, "etc/shadow"), "root:x");
    await put(path.join(containerRoot, "root/.ssh/id_rsa"), "KEY");
    const plan = await planMedia(
      "MEDIA:/etc/shadow MEDIA:/root/.ssh/id_rsa",
      ctx,
      telegramLimits(),
    );
    expect(plan.outcomes.map((o) => o.status)).toEqual(["denied", "denied"]);
    expect(calls).toEqual([]);
  });

  it("does not fall back after a host candidate escaped its root", async () => {
    const { l, containerRoot, calls, ctx } = await withContainer();
    await put(path.join(containerRoot, "workspace/a.txt"), "container");
    await link(path.join(l.profile, "workspace/a.txt"), path.join(l.outside, "x"));
    await put(path.join(l.outside, "x"), "outside");
    const plan = await planMedia("MEDIA:/workspace/a.txt", ctx, telegramLimits());
    expect(plan.outcomes[0]).toMatchObject({ status: "denied" });
    expect(calls).toEqual([]);
  });

  it("is never used by the local backend", async () => {
    const { calls, ctx } = await withContainer({ backend: "local", allowDirs: ["/nonexistent"] });
    await planMedia("MEDIA:/nonexistent/a.txt", ctx, telegramLimits());
    expect(calls).toEqual([]);
  });
});

/** A source that answers every path with a symlink, as the engine does for in-container links. */
function linkingSource(
  targets: Record<string, string>,
  files: ContainerFileSource,
  calls: string[],
) {
  const source: ContainerFileSource = {
    async read(containerPath, maxBytes) {
      calls.push(containerPath);
      const target = targets[containerPath];
      return target === undefined ? files.read(containerPath, maxBytes) : { linkTarget: target };
    },
  };
  return source;
}

describe("archive fallback and symlinks inside the container", () => {
  it("withholds a link whose real path is on the deny list, without reading it", async () => {
    const { containerRoot, ctx } = await withContainer();
    await put(path.join(containerRoot, "etc/passwd"), Buffer.from("root:x:0:0"));
    const calls: string[] = [];
    const source = linkingSource(
      { "/tmp/pw": "/etc/passwd" },
      directorySource(containerRoot, []),
      calls,
    );
    const plan = await planMedia("MEDIA:/tmp/pw", { ...ctx, container: source }, telegramLimits());
    plans.push(plan);
    expect(plan.outcomes).toHaveLength(1);
    expect(plan.outcomes[0]).toMatchObject({ status: "denied", path: "/tmp/pw" });
    expect(plan.outcomes[0]!.candidates).toContainEqual(
      expect.objectContaining({ source: "container", result: "symlink", detail: "/etc/passwd" }),
    );
    expect(calls).toEqual(["/tmp/pw"]);
    expect(plan.text).not.toContain("/tmp/pw");
  });

  it("delivers a link to an ordinary file in the container", async () => {
    const { containerRoot, ctx } = await withContainer();
    await put(path.join(containerRoot, "tmp/real.png"), Bytes.png);
    const calls: string[] = [];
    const source = linkingSource(
      { "/tmp/l": "/tmp/real.png" },
      directorySource(containerRoot, []),
      calls,
    );
    const plan = await planMedia("MEDIA:/tmp/l", { ...ctx, container: source }, telegramLimits());
    plans.push(plan);
    expect(plan.ready()).toHaveLength(1);
    expect(await plan.ready()[0]!.file.read()).toEqual(Bytes.png);
    expect(calls).toEqual(["/tmp/l", "/tmp/real.png"]);
  });

  it("gives up on a source that answers links forever", async () => {
    const { containerRoot, ctx } = await withContainer();
    const calls: string[] = [];
    const source = linkingSource(
      { "/tmp/a": "/tmp/b", "/tmp/b": "/tmp/a" },
      directorySource(containerRoot, []),
      calls,
    );
    const plan = await planMedia("MEDIA:/tmp/a", { ...ctx, container: source }, telegramLimits());
    plans.push(plan);
    expect(plan.outcomes[0]).toMatchObject({ status: "unreachable", path: "/tmp/a" });
    expect(calls.length).toBeLessThanOrEqual(3);
    expect(plan.text).toContain("MEDIA:/tmp/a");
  });
});
