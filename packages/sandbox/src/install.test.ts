import { mkdir, mkdtemp, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { installIdOf } from "./install.js";

describe("installIdOf", () => {
  let base = "";
  beforeAll(async () => {
    base = await mkdtemp(join(tmpdir(), "mg-install-"));
  });
  afterAll(async () => {
    await rm(base, { recursive: true, force: true });
  });

  it("is 12 hex chars, the same for every spelling of one home", async () => {
    const home = join(base, "home");
    await mkdir(home);
    await symlink(home, join(base, "alias"));
    const id = installIdOf(home);
    expect(id).toMatch(/^[0-9a-f]{12}$/);
    expect(installIdOf(`${home}/`)).toBe(id);
    expect(installIdOf(join(base, "alias"))).toBe(id);
    expect(installIdOf(join(home, "profiles", ".."))).toBe(id);
  });

  it("differs between two homes", () => {
    expect(installIdOf(join(base, "one"))).not.toBe(installIdOf(join(base, "two")));
  });

  it("does not change when a missing home is created later", async () => {
    const home = join(base, "later", "home");
    const before = installIdOf(home);
    await mkdir(home, { recursive: true });
    expect(installIdOf(home)).toBe(before);
  });
});
