import { access, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { tempDirForTest } from "./temp-dir.js";

describe("tempDirForTest", () => {
  let made = "";

  it("makes a fresh directory under the prefix", async () => {
    made = await tempDirForTest("mg-temp-dir-test-");
    expect(made).toMatch(/mg-temp-dir-test-[^/]+$/);
    await writeFile(join(made, "inside.txt"), "x");
    await expect(access(join(made, "inside.txt"))).resolves.toBeUndefined();
  });

  it("has removed it, and what it held, once that test finished", async () => {
    expect(made).not.toBe("");
    await expect(access(made)).rejects.toMatchObject({ code: "ENOENT" });
  });
});
