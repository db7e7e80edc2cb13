import { execFileSync } from "node:child_process";
import { mkdir, rm } from "node:fs/promises";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { MediaConfigError } from "../src/errors.js";
import { discordLimits, telegramLimits } from "../src/limits.js";
import { noticeFor } from "../src/notice.js";
import { planMedia, recordPlan, resumePlan } from "../src/plan.js";
import { isPlanRecord } from "../src/plan-record.js";
import type { MediaOutcome, MediaPlan, TranslateContext } from "../src/types.js";
import { Bytes, layout, link, put, tempDir } from "./helpers.js";

const limits = telegramLimits();

async function plan(reply: string, ctx: TranslateContext, upload = limits): Promise<MediaPlan> {
  const result = await planMedia(reply, ctx, upload);
  plans.push(result);
  return result;
}
const plans: MediaPlan[] = [];
afterEach(async () => {
  for (const done of plans.splice(0)) await done.dispose();
});

async function only(reply: string, ctx: TranslateContext): Promise<MediaOutcome> {
  const result = await plan(reply, ctx);
  expect(result.outcomes).toHaveLength(1);
  return result.outcomes[0]!;
}

async function contentOf(outcome: MediaOutcome): Promise<string> {
  if (outcome.status !== "ready") throw new Error(`not ready: ${JSON.stringify(outcome)}`);
  return (await outcome.file.read()).toString();
}

describe("planMedia: a stop aborts planning", () => {
  it("rejects with the abort reason before the next tag once its signal aborts", async () => {
    const l = await layout();
    await put(path.join(l.profile, "workspace/a.txt"), "a");
    const controller = new AbortController();
    controller.abort(new Error("gateway stopping"));
    await expect(
      planMedia("MEDIA:/workspace/a.txt", { ...l.ctx, signal: controller.signal }, limits),
    ).rejects.toThrow("gateway stopping");
    const planned = await plan("MEDIA:/workspace/a.txt", {
      ...l.ctx,
      signal: new AbortController().signal,
    });
    expect(planned.outcomes.map((o) => o.status)).toEqual(["ready"]);
  });
});

describe("planMedia: translation through the slot layouts", () => {
  it("tries shared, then profile, then the legacy session dir", async () => {
    const l = await layout();
    await put(path.join(l.session, "workspace/old.txt"), "session");
    await put(path.join(l.profile, "workspace/old.txt"), "profile");
    await put(path.join(l.profile, "workspace/p.txt"), "profile only");
    await put(path.join(l.session, "workspace/s.txt"), "session only");
    await put(path.join(l.shared, "workspace/old.txt"), "shared");
    expect(await contentOf(await only("MEDIA:/workspace/old.txt", l.ctx))).toBe("shared");
    expect(await contentOf(await only("MEDIA:/workspace/p.txt", l.ctx))).toBe("profile only");
    expect(await contentOf(await only("MEDIA:/workspace/s.txt", l.ctx))).toBe("session only");
  });

  it("maps /root to the slot's home directory and relative paths to /workspace", async () => {
    const l = await layout();
    await put(path.join(l.profile, "home/notes.txt"), "home");
    await put(path.join(l.profile, "workspace/out/r.txt"), "relative");
    expect(await contentOf(await only("MEDIA:/root/notes.txt", l.ctx))).toBe("home");
    expect(await contentOf(await only("MEDIA:~/notes.txt", l.ctx))).toBe("home");
    expect(await contentOf(await only("MEDIA:out/r.txt", l.ctx))).toBe("relative");
  });

  it("translates volumes longest container prefix first, before the workspace", async () => {
    const l = await layout();
    const outer = path.join(l.root, "outer");
    const inner = path.join(l.root, "inner");
    await put(path.join(outer, "deep/x.txt"), "outer");
    await put(path.join(inner, "x.txt"), "inner");
    await put(path.join(outer, "y.txt"), "outer y");
    await put(path.join(l.profile, "workspace/mnt/y.txt"), "workspace");
    const ctx = {
      ...l.ctx,
      volumes: [`${outer}:/workspace/mnt`, `${inner}:/workspace/mnt/deep:ro`],
    };
    expect(await contentOf(await only("MEDIA:/workspace/mnt/deep/x.txt", ctx))).toBe("inner");
    expect(await contentOf(await only("MEDIA:/workspace/mnt/y.txt", ctx))).toBe("outer y");
  });

  it("falls through to the next layout when a volume lacks the file", async () => {
    const l = await layout();
    const vol = path.join(l.root, "vol");
    await mkdir(vol);
    await put(path.join(l.profile, "workspace/mnt/z.txt"), "workspace z");
    const ctx = { ...l.ctx, volumes: [`${vol}:/workspace/mnt`, "named:/named"] };
    const outcome = await only("MEDIA:/workspace/mnt/z.txt", ctx);
    expect(await contentOf(outcome)).toBe("workspace z");
    expect(outcome.candidates.map((c) => [c.source, c.result])).toEqual([
      ["volume", "missing"],
      ["workspace", "missing"],
      ["workspace", "ok"],
    ]);
  });

  it("accepts a symlink that stays inside its root", async () => {
    const l = await layout();
    await put(path.join(l.profile, "workspace/real.png"), Bytes.png);
    await link(path.join(l.profile, "workspace/sub/alias.png"), "../real.png");
    const outcome = await only("MEDIA:/workspace/sub/alias.png", l.ctx);
    expect(outcome).toMatchObject({ status: "ready", kind: "photo", filename: "alias.png" });
  });

  it("rejects a symlink escape and uses the next candidate", async () => {
    const l = await layout();
    const secret = await put(path.join(l.outside, "secret.txt"), "SECRET");
    await link(path.join(l.shared, "workspace/a.txt"), secret);
    await put(path.join(l.profile, "workspace/a.txt"), "profile copy");
    const outcome = await only("MEDIA:/workspace/a.txt", l.ctx);
    expect(await contentOf(outcome)).toBe("profile copy");
    expect(outcome.candidates.map((c) => c.result)).toEqual(["escapes_root", "ok"]);
  });

  it("denies a path whose only candidates escape, removes the tag and never echoes it", async () => {
    const l = await layout();
    const secret = await put(path.join(l.outside, "secret-name.txt"), "SECRET");
    await link(path.join(l.profile, "workspace/chain1"), "chain2");
    await link(path.join(l.profile, "workspace/chain2"), secret);
    const result = await plan("look MEDIA:/workspace/chain1 here", l.ctx);
    const outcome = result.outcomes[0]!;
    expect(outcome).toMatchObject({ status: "denied", reason: "symlink escapes its root" });
    expect(result.text).toBe("look here");
    expect(noticeFor(outcome)).not.toContain("chain1");
    expect(result.ready()).toEqual([]);
  });

  it("rejects a symlink from the workspace into the slot's home", async () => {
    const l = await layout();
    await put(path.join(l.profile, "home/notes.txt"), "home");
    await link(path.join(l.profile, "workspace/n.txt"), "../home/notes.txt");
    expect(await only("MEDIA:/workspace/n.txt", l.ctx)).toMatchObject({ status: "denied" });
  });

  it("leaves an unreachable tag visible and names its basename in the notice", async () => {
    const l = await layout();
    const result = await plan("chart: MEDIA:/workspace/missing.png done", l.ctx);
    expect(result.outcomes[0]).toMatchObject({ status: "unreachable", reason: "not_found" });
    expect(result.text).toBe("chart: MEDIA:/workspace/missing.png done");
    expect(noticeFor(result.outcomes[0]!)).toBe("⚠️ Couldn't deliver missing.png");
  });

  it("treats a directory and a FIFO as unreachable without blocking", async () => {
    const l = await layout();
    await mkdir(path.join(l.profile, "workspace/dir"));
    execFileSync("mkfifo", [path.join(l.profile, "workspace/pipe")]);
    const result = await plan("MEDIA:/workspace/dir MEDIA:/workspace/pipe", l.ctx);
    expect(result.outcomes.map((o) => o.status)).toEqual(["unreachable", "unreachable"]);
    expect(result.outcomes[1]!.candidates.map((c) => c.result)).toContain("not_regular");
  });

  it("never translates /root/.mediagate through the home mount", async () => {
    const l = await layout();
    await put(path.join(l.profile, "home/.mediagate/file.txt"), "x");
    const outcome = await only("MEDIA:/root/.mediagate/file.txt", l.ctx);
    expect(outcome).toMatchObject({ status: "denied", candidates: [] });
  });
});

describe("planMedia: delivery policy", () => {
  it.each([
    "/etc/passwd",
    "/workspace/../etc/shadow",
    "/root/.ssh/id_rsa",
    "/root/.aws/credentials",
    "/var/run/docker.sock",
    "/proc/self/environ",
  ])("denies %s before looking on disk", async (tagPath) => {
    const l = await layout();
    await put(path.join(l.profile, "home/.ssh/id_rsa"), "KEY");
    await put(path.join(l.profile, "home/.aws/credentials"), "KEY");
    const result = await plan(`MEDIA:${tagPath}`, l.ctx);
    expect(result.outcomes[0]).toMatchObject({ status: "denied", candidates: [] });
    expect(result.text).toBe("");
  });

  it("denies on the real path: a home symlink to the slot's .ssh", async () => {
    const l = await layout();
    await put(path.join(l.profile, "home/.ssh/id_rsa"), "KEY");
    await link(path.join(l.profile, "home/key.txt"), ".ssh/id_rsa");
    const outcome = await only("MEDIA:/root/key.txt", l.ctx);
    expect(outcome).toMatchObject({ status: "denied", reason: "home credential" });
  });

  it("denies a profile home secret reached through a volume", async () => {
    const l = await layout();
    await put(path.join(l.home, ".env"), "TOKEN=1");
    const ctx = { ...l.ctx, volumes: [`${l.home}:/mnt/home`] };
    expect(await only("MEDIA:/mnt/home/.env", ctx)).toMatchObject({
      status: "denied",
      reason: "profile secret",
    });
  });

  it("local backend: delivers only under allow-dirs", async () => {
    const l = await layout();
    const allowed = path.join(l.root, "allowed");
    const inside = await put(path.join(allowed, "ok.txt"), "ok");
    const outsideFile = await put(path.join(l.outside, "no.txt"), "no");
    await link(path.join(allowed, "out.txt"), outsideFile);
    const ctx = { ...l.ctx, backend: "local" as const, allowDirs: [allowed] };
    expect(await contentOf(await only(`MEDIA:${inside}`, ctx))).toBe("ok");
    expect(await only(`MEDIA:${outsideFile}`, ctx)).toMatchObject({
      status: "denied",
      reason: "outside media.allowDirs",
    });
    expect(await only(`MEDIA:${allowed}/out.txt`, ctx)).toMatchObject({ status: "denied" });
    expect(await only("MEDIA:relative.txt", ctx)).toMatchObject({ status: "unreachable" });
  });
});

describe("planMedia: classification and limits", () => {
  it("classifies by content and applies the reply's directives", async () => {
    const l = await layout();
    await put(path.join(l.profile, "workspace/a.png"), Bytes.png);
    await put(path.join(l.profile, "workspace/voice.ogg"), Bytes.opus);
    await put(path.join(l.profile, "workspace/anim.gif"), Bytes.gif);
    const result = await plan(
      "[[audio_as_voice]] MEDIA:/workspace/a.png MEDIA:/workspace/voice.ogg MEDIA:/workspace/anim.gif",
      l.ctx,
    );
    expect(result.asVoice).toBe(true);
    expect(result.ready().map((m) => [m.kind, m.mime, m.size])).toEqual([
      ["photo", "image/png", Bytes.png.length],
      ["voice", "audio/ogg; codecs=opus", Bytes.opus.length],
      ["animation", "image/gif", Bytes.gif.length],
    ]);
    const documents = await plan("[[as_document]] MEDIA:/workspace/a.png", l.ctx);
    expect(documents.ready()[0]).toMatchObject({ kind: "document", mime: "image/png" });
  });

  it("reports too_large with size and limit, and closes the file", async () => {
    const l = await layout();
    await put(path.join(l.profile, "workspace/big.bin"), Buffer.alloc(2048));
    const result = await plan("MEDIA:/workspace/big.bin", l.ctx, discordLimits({ maxBytes: 1000 }));
    const outcome = result.outcomes[0]!;
    expect(outcome).toMatchObject({
      status: "too_large",
      size: 2048,
      limit: 1000,
      kind: "document",
    });
    expect(result.text).toBe("");
    expect(noticeFor(outcome)).toBe(
      "⚠️ Couldn't deliver big.bin: it is 2 KB, over the 1 KB limit for a document.",
    );
  });

  it("sends a photo over the photo limit as a document when it fits", async () => {
    const l = await layout();
    await put(
      path.join(l.profile, "workspace/a.png"),
      Buffer.concat([Bytes.png, Buffer.alloc(500)]),
    );
    const small = telegramLimits({ photoBytes: 100, otherBytes: 10_000 });
    const result = await plan("MEDIA:/workspace/a.png", l.ctx, small);
    expect(result.outcomes[0]).toMatchObject({
      status: "ready",
      kind: "document",
      mime: "image/png",
    });
  });
});

describe("planMedia: the plan", () => {
  it("collapses two tags naming one file, removing both from the text", async () => {
    const l = await layout();
    await put(path.join(l.profile, "workspace/a.txt"), "a");
    await link(path.join(l.profile, "workspace/b.txt"), "a.txt");
    const result = await plan("x MEDIA:/workspace/a.txt y MEDIA:/workspace/b.txt z", l.ctx);
    expect(result.outcomes).toHaveLength(1);
    expect(result.text).toBe("x y z");
  });

  it("serves the file again from byte 0 for each stream and closes on dispose", async () => {
    const l = await layout();
    const content = "0123456789".repeat(10_000);
    await put(path.join(l.profile, "workspace/a.txt"), content);
    const result = await plan("MEDIA:/workspace/a.txt", l.ctx);
    const { file } = result.ready()[0]!;
    for (let attempt = 0; attempt < 3; attempt++) {
      const chunks: Buffer[] = [];
      for await (const chunk of file.stream()) chunks.push(chunk as Buffer);
      expect(Buffer.concat(chunks).toString()).toBe(content);
    }
    expect((await file.read()).toString()).toBe(content);
    await result.dispose();
    await result.dispose();
    await expect(file.read()).rejects.toThrow();
  });

  it("resolves at most maxFiles tags and keeps the rest visible", async () => {
    const l = await layout({ maxFiles: 1 });
    await put(path.join(l.profile, "workspace/a.txt"), "a");
    await put(path.join(l.profile, "workspace/b.txt"), "b");
    const result = await plan("MEDIA:/workspace/a.txt MEDIA:/workspace/b.txt", l.ctx);
    expect(result.outcomes.map((o) => o.status)).toEqual(["ready", "unreachable"]);
    expect(result.outcomes[1]).toMatchObject({ reason: "over_max_files" });
    expect(result.text).toBe("MEDIA:/workspace/b.txt");
  });

  it("rejects a context it cannot work with, naming the field", async () => {
    const dir = await tempDir();
    const ctx: TranslateContext = {
      backend: "docker",
      slotDirs: ["relative/slot"],
      volumes: [],
      allowDirs: [],
      protectedHomes: [],
      tmpDir: dir,
    };
    await expect(planMedia("MEDIA:/x", ctx, limits)).rejects.toThrow(MediaConfigError);
    await expect(planMedia("MEDIA:/x", ctx, limits)).rejects.toThrow(/slotDirs/);
  });
});

describe("noticeFor", () => {
  it("says nothing for a ready file and never echoes a denied path", () => {
    const denied = {
      status: "denied",
      path: "/root/.ssh/id_rsa",
      reason: "x",
      candidates: [],
    } as const;
    expect(noticeFor(denied)).not.toMatch(/ssh|id_rsa|root/);
    expect(noticeFor(denied)).toContain("withheld");
  });

  it("strips control characters from a name it shows", () => {
    const outcome = {
      status: "unreachable",
      path: "/w/a\u0007b\nc.png",
      reason: "not_found",
      candidates: [],
    } as const;
    expect(noticeFor(outcome)).toBe("⚠️ Couldn't deliver abc.png");
  });
});

describe("recordPlan / resumePlan: a resumed delivery uses the plan recorded before its first send", () => {
  it("keeps text and order; a file gone since is lost, a link swapped in is refused, a done step is not read", async () => {
    const l = await layout();
    const secret = await put(path.join(l.outside, "secret.txt"), "SECRET");
    for (const name of ["a", "b", "c", "d"])
      await put(path.join(l.profile, `workspace/${name}.txt`), name);
    const first = await plan(
      "four files\nMEDIA:/workspace/a.txt\nMEDIA:/workspace/b.txt\nMEDIA:/workspace/c.txt\nMEDIA:/workspace/nope.txt\nMEDIA:/workspace/d.txt",
      l.ctx,
    );
    const record = JSON.parse(JSON.stringify(recordPlan(first))) as unknown;
    if (!isPlanRecord(record)) throw new Error("not a plan record");
    expect(record.items[0]).toMatchObject({
      status: "ready",
      kind: "document",
      size: 1,
      hostPath: path.join(l.profile, "workspace/a.txt"),
    });

    await rm(path.join(l.profile, "workspace/b.txt"));
    await rm(path.join(l.profile, "workspace/c.txt"));
    await link(path.join(l.profile, "workspace/c.txt"), secret);
    await put(path.join(l.profile, "workspace/nope.txt"), "appeared since");
    const { plan: resumed, lost } = await resumePlan(record, l.ctx, limits, {
      reopen: (tagged) => tagged !== "/workspace/a.txt",
    });
    plans.push(resumed);

    expect(resumed.text).toBe(first.text);
    expect(resumed.outcomes.map((o) => [o.path, o.status])).toEqual([
      ["/workspace/a.txt", "ready"],
      ["/workspace/b.txt", "unreachable"],
      ["/workspace/c.txt", "denied"],
      ["/workspace/nope.txt", "unreachable"], // as planned: its notice may already be out
      ["/workspace/d.txt", "ready"],
    ]);
    expect(lost.map((o) => noticeFor(o))).toEqual([
      "⚠️ Couldn't deliver b.txt",
      "⚠️ An attachment was withheld: the delivery policy does not allow sending that file.",
    ]);
    const [a, , , , d] = resumed.outcomes;
    expect(await contentOf(d!)).toBe("d");
    await expect(a?.status === "ready" ? a.file.read() : undefined).rejects.toThrow(
      /not read again/,
    );
  });

  it("sends a reopened file as its recorded kind, and refuses it once it outgrew that kind's limit", async () => {
    const l = await layout();
    const photo = await put(path.join(l.profile, "workspace/p.png"), Bytes.png);
    const small = telegramLimits({ photoBytes: 1000 });
    const record = recordPlan(await plan("MEDIA:/workspace/p.png", l.ctx, small));
    expect(record.items).toMatchObject([{ status: "ready", kind: "photo" }]);
    await put(photo, Buffer.concat([Bytes.png, Buffer.alloc(2000)]));
    const { plan: resumed, lost } = await resumePlan(record, l.ctx, small);
    plans.push(resumed);
    expect(lost).toEqual([
      expect.objectContaining({
        status: "too_large",
        kind: "photo",
        size: Bytes.png.length + 2000,
        limit: 1000,
      }),
    ]);
  });

  it("reads back only what it wrote", () => {
    expect(
      isPlanRecord({ version: 1, text: "", asVoice: false, asDocument: false, items: [] }),
    ).toBe(true);
    expect(
      isPlanRecord({ version: 2, text: "", asVoice: false, asDocument: false, items: [] }),
    ).toBe(false);
    expect(
      isPlanRecord({
        version: 1,
        text: "",
        asVoice: false,
        asDocument: false,
        items: [{ status: "ready", path: "/x" }],
      }),
    ).toBe(false);
  });
});
