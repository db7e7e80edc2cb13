import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";

/**
 * `pnpm check:imports` (dependency-cruiser with the repository's `.dependency-cruiser.cjs`,
 * run by scripts/test.sh): planted trees shaped like the workspace, with that config and
 * checked by that script's command, must fail on a cycle and on each import the package
 * direction of docs/architecture.md forbids, and pass the directions it allows.
 */
const RepoRoot = fileURLToPath(new URL("../../", import.meta.url));
const Cli = join(RepoRoot, "node_modules/dependency-cruiser/bin/dependency-cruise.mjs");
const ConfigName = ".dependency-cruiser.cjs";
const [command, ...scriptArgs] = (
  JSON.parse(readFileSync(join(RepoRoot, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  }
).scripts["check:imports"]?.split(" ") ?? [""];

/** One line of the checker's report: `error <rule>: <from> → <to>` (a cycle's lines follow it). */
interface Violation {
  readonly rule: string;
  readonly from: string;
  readonly to: string;
}

interface Checked {
  readonly code: number;
  readonly report: string;
  readonly violations: readonly Violation[];
}

let tree: string | undefined;

afterEach(async () => {
  if (tree !== undefined) await rm(tree, { recursive: true, force: true });
  tree = undefined;
});

/** Writes `files` (path → source) into a fresh tree and checks it as `pnpm check:imports` does. */
async function check(files: Record<string, string>): Promise<Checked> {
  const root = await mkdtemp(join(tmpdir(), "mg-imports-"));
  tree = root;
  await mkdir(join(root, "apps"));
  await mkdir(join(root, "packages"));
  await copyFile(join(RepoRoot, ConfigName), join(root, ConfigName));
  for (const [path, source] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), source);
  }
  expect(command).toBe("depcruise");
  const args = [Cli, ...scriptArgs];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      args,
      { cwd: root, env: { ...process.env, NO_COLOR: "1" } },
      (error, stdout) => {
        const code = error === null ? 0 : typeof error.code === "number" ? error.code : -1;
        const violations = [...stdout.matchAll(/^ *error ([\w-]+): (\S+) → *(\S*)$/gm)].map(
          ([, rule = "", from = "", to = ""]) => ({ rule, from, to }),
        );
        resolve({ code, report: stdout, violations });
      },
    );
  });
}

const ruleNames = (checked: Checked) => [...new Set(checked.violations.map((v) => v.rule))];

describe("pnpm check:imports", () => {
  it("fails on an import cycle, one of whose imports is `import type`", async () => {
    const checked = await check({
      "apps/gateway/src/defaults.ts":
        'import type { Options } from "./shell.js";\n' +
        "export const Defaults = { timeoutMs: 1 } satisfies Options;\n",
      "apps/gateway/src/shell.ts":
        'import { Defaults } from "./defaults.js";\n' +
        "export interface Options { timeoutMs: number }\nexport const timeoutMs = Defaults.timeoutMs;\n",
    });
    expect(checked.code).not.toBe(0);
    expect(ruleNames(checked)).toEqual(["no-circular"]);
    // One cycle, reported once, through both files.
    expect(checked.violations).toHaveLength(1);
    expect(checked.report).toContain("apps/gateway/src/defaults.ts");
    expect(checked.report).toContain("apps/gateway/src/shell.ts");
  });

  it("fails on a package that imports the gateway, by path or by name", async () => {
    const checked = await check({
      "apps/gateway/src/log.ts": "export const log = 1;\n",
      "packages/media/src/plan.ts":
        'import { log } from "../../../apps/gateway/src/log.js";\n' +
        'import { Gateway } from "@mediagate/gateway";\nexport const x = [log, Gateway];\n',
    });
    expect(checked.code).not.toBe(0);
    expect(ruleNames(checked)).toEqual(["packages-never-import-the-gateway"]);
    expect(checked.violations.map((v) => v.to).sort()).toEqual([
      "@mediagate/gateway",
      "apps/gateway/src/log.ts",
    ]);
  });

  it("fails on media, sandbox or web importing one another", async () => {
    const checked = await check({
      "packages/sandbox/src/labels.ts": "export const labels = 1;\n",
      "packages/web/src/server.ts":
        'import { labels } from "../../sandbox/src/labels.js";\n' +
        'import { classify } from "@mediagate/media";\nexport const x = [labels, classify];\n',
    });
    expect(checked.code).not.toBe(0);
    expect(ruleNames(checked)).toEqual(["packages-import-only-io"]);
    expect(checked.violations.map((v) => v.to).sort()).toEqual([
      "@mediagate/media",
      "packages/sandbox/src/labels.ts",
    ]);
  });

  it("fails on io importing any workspace package", async () => {
    const checked = await check({
      "packages/media/src/chars.ts": "export const chars = 1;\n",
      "packages/io/src/index.ts":
        'import { chars } from "../../media/src/chars.js";\nexport const x = chars;\n',
    });
    expect(checked.code).not.toBe(0);
    expect(ruleNames(checked)).toEqual(["io-imports-nothing-of-ours"]);
  });

  it("passes the allowed directions: the gateway to the packages, the packages to io", async () => {
    const checked = await check({
      "packages/io/src/index.ts": "export const wait = 1;\n",
      "packages/sandbox/src/index.ts":
        'import { wait } from "../../io/src/index.js";\nexport const sandbox = wait;\n',
      "packages/web/src/index.ts":
        'import { wait } from "@mediagate/io";\nexport const web = wait;\n',
      "apps/gateway/src/gateway.ts":
        'import { sandbox } from "../../../packages/sandbox/src/index.js";\n' +
        'import { web } from "@mediagate/web";\nexport const gateway = [sandbox, web];\n',
    });
    expect(checked.violations).toEqual([]);
    expect(checked.code).toBe(0);
  });
});
