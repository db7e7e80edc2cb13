import { readFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const dist = join(dirname(fileURLToPath(import.meta.url)), "../dist");

/** Every declaration file reachable from dist/index.d.ts through relative imports. */
async function reachable(): Promise<Map<string, string>> {
  const seen = new Map<string, string>();
  const queue = ["index.d.ts"];
  while (queue.length > 0) {
    const file = queue.pop() ?? "";
    if (seen.has(file)) continue;
    const text = await readFile(join(dist, file), "utf8");
    seen.set(file, text);
    for (const match of text.matchAll(/from "\.\/([^"]+)\.js"/g)) queue.push(`${match[1]}.d.ts`);
  }
  return seen;
}

describe("public declarations (built by the global setup)", () => {
  it("leak no dockerode type", async () => {
    const files = await reachable();
    expect(files.size).toBeGreaterThan(3);
    for (const [file, text] of files) {
      expect(`${file}: ${/from "dockerode"|import\("dockerode"\)/.test(text)}`).toBe(
        `${file}: false`,
      );
    }
  });
});
