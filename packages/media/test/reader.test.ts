import { chmod, link as hardLink, mkdir, rename } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { mayRead, maySearch, NotReadable } from "../src/access.js";
import { telegramLimits } from "../src/limits.js";
import { noticeFor } from "../src/notice.js";
import { planMediaWithHooks, recordPlan, resumePlan } from "../src/plan.js";
import { EscapesRoot } from "../src/resolve.js";
import type {
  ContainerFileSource,
  FileReader,
  MediaOutcome,
  MediaPlan,
  TranslateContext,
} from "../src/types.js";
import { type Layout, layout, link, put } from "./helpers.js";

const limits = telegramLimits();
const uid = process.getuid?.() ?? 1000;
const gid = process.getgid?.() ?? 1000;
/** The user who made the test's files. */
const owner: FileReader = { uid, gids: [gid] };
/** Another user in the files' group (a session sharing the sandbox group). */
const member: FileReader = { uid: uid + 1, gids: [gid] };
/** A user in none of their groups. */
const stranger: FileReader = { uid: uid + 1, gids: [gid + 1] };

const Unreadable =
  "⚠️ An attachment was withheld: this session cannot read that file in the sandbox.";

const plans: MediaPlan[] = [];
afterEach(async () => {
  for (const done of plans.splice(0)) await done.dispose();
});

async function plan(
  reply: string,
  ctx: TranslateContext,
  hooks: Parameters<typeof planMediaWithHooks>[3] = {},
): Promise<MediaPlan> {
  const result = await planMediaWithHooks(reply, ctx, limits, hooks);
  plans.push(result);
  return result;
}

/** Each tag's outcome for `reader`: its status, and the content of a ready one. */
async function outcomesFor(reader: FileReader, l: Layout, ...tags: string[]) {
  const planned = await plan(tags.map((t) => `MEDIA:${t}`).join("\n"), {
    ...l.ctx,
    reader: async () => reader,
  });
  return Promise.all(planned.outcomes.map(described));
}

async function described(outcome: MediaOutcome): Promise<string> {
  if (outcome.status === "ready") return `ready ${(await outcome.file.read()).toString()}`;
  if (outcome.status === "denied") return `denied ${outcome.reason}`;
  return outcome.status;
}

/** A workspace with a private file, a private directory and a group-readable file. */
async function files(): Promise<Layout> {
  const l = await layout();
  const ws = path.join(l.profile, "workspace");
  await chmod(await put(path.join(ws, "private.txt"), "private"), 0o600);
  await chmod(await put(path.join(ws, "shared.txt"), "shared"), 0o640);
  await chmod(await put(path.join(ws, "public.txt"), "public"), 0o644);
  await chmod(await put(path.join(ws, "pdir/inner.txt"), "inner"), 0o644);
  await chmod(path.join(ws, "pdir"), 0o700);
  await chmod(await put(path.join(ws, "gdir/inner.txt"), "team"), 0o640);
  await chmod(path.join(ws, "gdir"), 0o750);
  await chmod(await put(path.join(l.profile, "home/note.txt"), "home note"), 0o600);
  return l;
}

describe("mayRead / maySearch: the kernel's check for a user without capabilities", () => {
  const file = (mode: number, fileUid = 10, fileGid = 20) => ({ uid: fileUid, gid: fileGid, mode });

  it("takes the owner's bits for the owner, the group's for a member, the others' for the rest", () => {
    expect(mayRead(file(0o600), { uid: 10, gids: [] })).toBe(true);
    expect(mayRead(file(0o600), { uid: 11, gids: [20] })).toBe(false);
    expect(mayRead(file(0o640), { uid: 11, gids: [30, 20] })).toBe(true);
    expect(mayRead(file(0o640), { uid: 11, gids: [30] })).toBe(false);
    expect(mayRead(file(0o604), { uid: 11, gids: [30] })).toBe(true);
    expect(maySearch(file(0o710), { uid: 11, gids: [20] })).toBe(true);
    expect(maySearch(file(0o760), { uid: 11, gids: [20] })).toBe(false);
  });

  it("uses only the owner's bits for the owner, even when others may read", () => {
    expect(mayRead(file(0o044), { uid: 10, gids: [20] })).toBe(false);
    expect(mayRead(file(0o404), { uid: 11, gids: [20] })).toBe(false);
  });

  it("gives uid 0 no override, and a reader without a uid only the group's and others' bits", () => {
    expect(mayRead(file(0o600), { uid: 0, gids: [0] })).toBe(false);
    expect(mayRead(file(0o600, 0, 0), { uid: 0, gids: [0] })).toBe(true);
    expect(mayRead(file(0o600), { uid: undefined, gids: [20] })).toBe(false);
    expect(mayRead(file(0o640), { uid: undefined, gids: [20] })).toBe(true);
  });
});

describe("planMedia with a reader: a file is sent only if that user could read it", () => {
  it("sends the owner its 0600 file and withholds it from anyone else, with a notice naming nothing", async () => {
    const l = await files();
    expect(await outcomesFor(owner, l, "/workspace/private.txt", "/root/note.txt")).toEqual([
      "ready private",
      "ready home note",
    ]);
    const planned = await plan("MEDIA:/workspace/private.txt", {
      ...l.ctx,
      reader: async () => member,
    });
    const [outcome] = planned.outcomes;
    expect(outcome).toMatchObject({ status: "denied", reason: NotReadable });
    expect(noticeFor(outcome!)).toBe(Unreadable);
    expect(planned.text).toBe("");
    expect(await outcomesFor(member, l, "/root/note.txt")).toEqual([`denied ${NotReadable}`]);
  });

  it("sends a group-readable file to a member of the group, not to a stranger", async () => {
    const l = await files();
    const tags = ["/workspace/shared.txt", "/workspace/gdir/inner.txt", "/workspace/public.txt"];
    expect(await outcomesFor(member, l, ...tags)).toEqual([
      "ready shared",
      "ready team",
      "ready public",
    ]);
    expect(await outcomesFor(stranger, l, ...tags)).toEqual([
      `denied ${NotReadable}`,
      `denied ${NotReadable}`,
      "ready public",
    ]);
  });

  it("withholds a readable file in a directory the reader cannot search, and a missing one there alike", async () => {
    const l = await files();
    expect(
      await outcomesFor(member, l, "/workspace/pdir/inner.txt", "/workspace/pdir/absent.txt"),
    ).toEqual([`denied ${NotReadable}`, `denied ${NotReadable}`]);
    expect(await outcomesFor(owner, l, "/workspace/pdir/inner.txt")).toEqual(["ready inner"]);
    // Missing where the reader may look: not found, as before.
    expect(await outcomesFor(member, l, "/workspace/absent.txt")).toEqual(["unreachable"]);
  });

  it("resolves symlinks the same way: the target's directories and the link's own count", async () => {
    const l = await files();
    const ws = path.join(l.profile, "workspace");
    await link(path.join(ws, "to-private"), "private.txt");
    await link(path.join(ws, "to-pdir"), "pdir");
    await link(path.join(ws, "to-inner"), "pdir/inner.txt");
    await link(path.join(ws, "pdir/to-public"), "../public.txt");
    await link(path.join(ws, "to-public"), "gdir/../public.txt");
    await link(path.join(ws, "host-abs"), path.join(ws, "shared.txt"));
    await link(path.join(ws, "up-and-in"), "../workspace/shared.txt");
    const tags = [
      "/workspace/to-private",
      "/workspace/to-pdir/inner.txt",
      "/workspace/to-inner",
      // A link inside the private directory, to a file the reader may read: it cannot reach it.
      "/workspace/pdir/to-public",
      "/workspace/to-public",
    ];
    expect(await outcomesFor(member, l, ...tags)).toEqual([
      `denied ${NotReadable}`,
      `denied ${NotReadable}`,
      `denied ${NotReadable}`,
      `denied ${NotReadable}`,
      "ready public",
    ]);
    expect(await outcomesFor(member, l, "/workspace/up-and-in")).toEqual(["ready shared"]);
    // A host path through the test's private temp directory: only who may search it gets
    // through; for the others it leads into a directory they cannot search, and, found in no
    // container, it is withheld.
    expect(await outcomesFor(owner, l, "/workspace/host-abs")).toEqual(["ready shared"]);
    expect(await outcomesFor(member, l, "/workspace/host-abs")).toEqual([`denied ${EscapesRoot}`]);
  });

  it("answers alike for a name that is there and one that is not, through links that leave the root", async () => {
    const l = await files();
    const ws = path.join(l.profile, "workspace");
    const home = path.join(l.profile, "home");
    await chmod(await put(path.join(home, "hpdir/h.txt"), "home private"), 0o644);
    await chmod(path.join(home, "hpdir"), 0o700);
    await link(path.join(home, "to-inner"), "../workspace/pdir/inner.txt");
    await link(path.join(home, "to-absent"), "../workspace/pdir/absent.txt");
    const probes = (name: string) => [
      // Out of the root and straight back into its unsearchable directory.
      [`${name}-back`, `../../workspace/pdir/${name}.txt`],
      // Out, through a link outside that leads back in.
      [`${name}-via`, `../../home/to-${name}`],
      // Out, into an unsearchable directory outside the root.
      [`${name}-out`, `../../home/hpdir/${name === "inner" ? "h" : name}.txt`],
    ];
    for (const [name, target] of [...probes("inner"), ...probes("absent")]) {
      await link(path.join(ws, "mine", name!), target!);
    }
    const there = await outcomesFor(
      member,
      l,
      ...probes("inner").map(([name]) => `/workspace/mine/${name}`),
    );
    const absent = await outcomesFor(
      member,
      l,
      ...probes("absent").map(([name]) => `/workspace/mine/${name}`),
    );
    expect(there).toEqual([
      `denied ${NotReadable}`,
      `denied ${NotReadable}`,
      `denied ${EscapesRoot}`,
    ]);
    expect(absent).toEqual(there);
    expect(await outcomesFor(owner, l, "/workspace/mine/inner-back")).toEqual(["ready inner"]);
    expect(await outcomesFor(owner, l, "/workspace/mine/inner-via")).toEqual(["ready inner"]);
  });

  it("reads a link out of the root into a directory it cannot search from the container, and withholds it when the container has nothing there", async () => {
    const l = await files();
    const ws = path.join(l.profile, "workspace");
    const home = path.join(l.profile, "home");
    await chmod(await put(path.join(home, "hpdir/h.txt"), "home private"), 0o644);
    await chmod(path.join(home, "hpdir"), 0o700);
    await link(path.join(ws, "there"), "../home/hpdir/h.txt");
    await link(path.join(ws, "absent"), "../home/hpdir/absent.txt");
    await link(path.join(ws, "in-container"), "../home/hpdir/made-in-container.txt");
    // Out of the root into a directory the reader may search, and a name that is not there.
    await link(path.join(ws, "dangling"), "../home/no-such-dir/x.txt");
    const read: string[] = [];
    const container: ContainerFileSource = {
      async read(containerPath) {
        read.push(containerPath);
        if (containerPath !== "/workspace/in-container") return undefined;
        return { size: 9, stream: Readable.from([Buffer.from("container")]) };
      },
    };
    const planned = await plan(
      ["there", "absent", "in-container", "dangling"]
        .map((n) => `MEDIA:/workspace/${n}`)
        .join("\n"),
      { ...l.ctx, container, reader: async () => member },
    );
    expect(await Promise.all(planned.outcomes.map(described))).toEqual([
      `denied ${EscapesRoot}`,
      `denied ${EscapesRoot}`,
      "ready container",
      "unreachable",
    ]);
    expect(read).toEqual([
      "/workspace/there",
      "/workspace/absent",
      "/workspace/in-container",
      "/workspace/dangling",
    ]);
    expect(planned.text).toBe("MEDIA:/workspace/dangling");
  });

  it("still refuses links out of the root and credentials, and finds container-only links missing", async () => {
    const l = await files();
    const ws = path.join(l.profile, "workspace");
    await put(path.join(l.outside, "secret.txt"), "SECRET");
    await link(path.join(ws, "out"), path.join(l.outside, "secret.txt"));
    await link(path.join(ws, "container-abs"), "/workspace/shared.txt");
    await put(path.join(l.profile, "home/.ssh/id_rsa"), "KEY");
    expect(
      await outcomesFor(
        owner,
        l,
        "/workspace/out",
        "/root/.ssh/id_rsa",
        "/workspace/container-abs",
      ),
    ).toEqual(["denied symlink escapes its root", "denied home credential", "unreachable"]);
  });

  it("withholds a hard link to another user's 0600 file: the link keeps its owner and mode", async () => {
    const l = await files();
    const ws = path.join(l.profile, "workspace");
    await hardLink(path.join(ws, "private.txt"), path.join(ws, "mine-now.txt"));
    expect(await outcomesFor(member, l, "/workspace/mine-now.txt")).toEqual([
      `denied ${NotReadable}`,
    ]);
  });

  it("checks volumes too, and leaves the local backend's allow-dirs to the gateway's permissions", async () => {
    const l = await files();
    const volume = path.join(l.root, "volume");
    await chmod(await put(path.join(volume, "v.txt"), "volume"), 0o600);
    const withVolume = { ...l, ctx: { ...l.ctx, volumes: [`${volume}:/data`] } };
    expect(await outcomesFor(member, withVolume, "/data/v.txt")).toEqual([`denied ${NotReadable}`]);
    const local = {
      ...l,
      ctx: { ...l.ctx, backend: "local" as const, allowDirs: [volume] },
    };
    expect(await outcomesFor(member, local, path.join(volume, "v.txt"))).toEqual(["ready volume"]);
  });

  it("opens the file in the directories it walked, whatever is renamed meanwhile", async () => {
    const l = await files();
    const ws = path.join(l.profile, "workspace");
    await put(path.join(ws, "gdir/held.txt"), "held");
    const planned = await plan(
      "MEDIA:/workspace/gdir/held.txt",
      { ...l.ctx, reader: async () => member },
      {
        async beforeOpen() {
          await rename(path.join(ws, "gdir"), path.join(ws, "gdir-old"));
          await mkdir(path.join(ws, "gdir"));
          await put(path.join(ws, "gdir/held.txt"), "swapped");
        },
      },
    );
    expect(await Promise.all(planned.outcomes.map(described))).toEqual(["ready held"]);
  });

  it("asks who the reader is once per plan; when that fails, the files are not found", async () => {
    const l = await files();
    let asked = 0;
    const counted = await plan("MEDIA:/workspace/public.txt\nMEDIA:/workspace/shared.txt", {
      ...l.ctx,
      reader: async () => {
        asked += 1;
        return member;
      },
    });
    expect(counted.outcomes.map((o) => o.status)).toEqual(["ready", "ready"]);
    expect(asked).toBe(1);
    const failed = await plan("MEDIA:/workspace/public.txt", {
      ...l.ctx,
      reader: () => Promise.reject(new Error("engine unreachable")),
    });
    expect(failed.outcomes).toMatchObject([
      {
        status: "unreachable",
        candidates: [
          { result: "error", detail: "who may read it is unknown: engine unreachable" },
          { result: "error" },
          { result: "error" },
        ],
      },
    ]);
  });

  it("a resumed plan withholds a file made private since it was recorded", async () => {
    const l = await files();
    const ctx = { ...l.ctx, reader: async () => member };
    const record = recordPlan(await plan("MEDIA:/workspace/shared.txt", ctx));
    expect(record.items).toMatchObject([{ status: "ready" }]);
    await chmod(path.join(l.profile, "workspace/shared.txt"), 0o600);
    const { plan: resumed, lost } = await resumePlan(record, ctx, limits);
    plans.push(resumed);
    expect(lost.map(noticeFor)).toEqual([Unreadable]);
  });
});
