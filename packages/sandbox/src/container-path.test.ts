import { describe, expect, it } from "vitest";
import { canonicalPath, MaxLinkHops, type PathStat } from "./container-path.js";

const dir: PathStat = { size: 4096, mode: 0x800001ed, linkTarget: "" };
const file: PathStat = { size: 3, mode: 0o644, linkTarget: "" };
const link = (linkTarget: string): PathStat => ({ size: 1, mode: 0x080001ff, linkTarget });

/** A container filesystem as the engine's lstat would describe it. */
function tree(entries: Record<string, PathStat>) {
  const asked: string[] = [];
  const stat = async (path: string) => {
    asked.push(path);
    return entries[path];
  };
  return { asked, stat };
}

describe("canonicalPath", () => {
  const fs = {
    "/workspace": dir,
    "/workspace/d": dir,
    "/workspace/d/f": file,
    "/workspace/rel": link("d"),
    "/workspace/up": link("../root/.aws"),
    "/workspace/loop": link("loop"),
    "/root": dir,
    "/root/.aws": dir,
    "/root/.aws/credentials": file,
  };

  it("keeps a canonical path and returns the stat of its last component", async () => {
    const { asked, stat } = tree(fs);
    expect(await canonicalPath("/workspace/d/f", stat)).toEqual({
      path: "/workspace/d/f",
      stat: file,
    });
    expect(asked).toEqual(["/workspace", "/workspace/d", "/workspace/d/f"]);
  });

  it("resolves relative link targets from the link's directory, in parent components too", async () => {
    const { stat } = tree(fs);
    expect((await canonicalPath("/workspace/rel/f", stat))?.path).toBe("/workspace/d/f");
    expect((await canonicalPath("/workspace/up/credentials", stat))?.path).toBe(
      "/root/.aws/credentials",
    );
  });

  it("normalises dot, dot-dot and doubled slashes physically, after resolving links", async () => {
    const { stat } = tree(fs);
    expect((await canonicalPath("/workspace/../root/.aws//./credentials", stat))?.path).toBe(
      "/root/.aws/credentials",
    );
    expect((await canonicalPath("/workspace/up/../.aws/credentials", stat))?.path).toBe(
      "/root/.aws/credentials",
    );
    expect((await canonicalPath("/../../workspace/d/f", stat))?.path).toBe("/workspace/d/f");
  });

  it("gives up on relative, missing, not-a-directory and looping paths", async () => {
    const { stat } = tree(fs);
    expect(await canonicalPath("workspace/d/f", stat)).toBeUndefined();
    expect(await canonicalPath("/workspace/none/f", stat)).toBeUndefined();
    expect(await canonicalPath("/workspace/d/f/x", stat)).toBeUndefined();
    const { asked, stat: counting } = tree(fs);
    expect(await canonicalPath("/workspace/loop", counting)).toBeUndefined();
    expect(asked.filter((p) => p === "/workspace/loop")).toHaveLength(MaxLinkHops + 1);
  });
});
