import { readFileSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cruise } from "dependency-cruiser";
import extractDepcruiseOptions from "dependency-cruiser/config-utl/extract-depcruise-options";
import { afterEach, describe, expect, it } from "vitest";

/**
 * `pnpm check:imports` (dependency-cruiser with the repository's `.dependency-cruiser.cjs`,
 * run by scripts/test.sh): planted trees shaped like the workspace, with that config and
 * checked as that script's command checks them, must fail on a cycle and on each import the
 * package direction and the gateway's room directions of docs/architecture.md forbid, and
 * pass the directions they allow. dependency-cruiser runs in this process (its `cruise`, with
 * the script's paths and config, the `err` report the command prints): nine processes of its
 * CLI cost about 10 s of CPU, mostly loading it.
 */
const RepoRoot = fileURLToPath(new URL("../../", import.meta.url));
const ConfigName = ".dependency-cruiser.cjs";
const [command, ...scriptArgs] = (
  JSON.parse(readFileSync(join(RepoRoot, "package.json"), "utf8")) as {
    scripts: Record<string, string>;
  }
).scripts["check:imports"]?.split(" ") ?? [""];
/** The script's paths to check: its arguments before `--config <file>`. */
const scriptPaths = scriptArgs.slice(0, scriptArgs.indexOf("--config"));

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
  expect(scriptArgs.slice(scriptPaths.length)).toEqual(["--config", ConfigName]);
  const options = await extractDepcruiseOptions(join(root, ConfigName));
  const result = await cruise(scriptPaths, {
    ...options,
    validate: true,
    baseDir: root,
    outputType: "err",
  });
  const report = String(result.output);
  const violations = [...report.matchAll(/^ *error ([\w-]+): (\S+) → *(\S*)$/gm)].map(
    ([, rule = "", from = "", to = ""]) => ({ rule, from, to }),
  );
  return { code: result.exitCode, report, violations };
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

  it("fails on a shared root module importing a room, and a room importing gateway.ts", async () => {
    const checked = await check({
      "apps/gateway/src/session/key.ts": "export const key = 1;\n",
      "apps/gateway/src/log.ts":
        'import { key } from "./session/key.js";\nexport const log = key;\n',
      "apps/gateway/src/gateway.ts": "export class Gateway {}\n",
      "apps/gateway/src/commands/stop.ts":
        'import { Gateway } from "../gateway.js";\nexport const stop = Gateway;\n',
    });
    expect(checked.code).not.toBe(0);
    expect(ruleNames(checked).sort()).toEqual([
      "gateway-nothing-imports-the-composition",
      "gateway-shared-modules-import-no-room",
    ]);
  });

  it("fails on a channel importing the core, and the core importing a channel's adapter", async () => {
    const checked = await check({
      "apps/gateway/src/pipeline/types.ts": "export interface MessageContext { text: string }\n",
      "apps/gateway/src/channels/telegram/sender.ts": "export const send = 1;\n",
      "apps/gateway/src/channels/telegram/inbound.ts":
        'import type { MessageContext } from "../../pipeline/types.js";\n' +
        "export type Inbound = MessageContext;\n",
      "apps/gateway/src/pipeline/run-turn.ts":
        'import { send } from "../channels/telegram/sender.js";\nexport const run = send;\n',
    });
    expect(checked.code).not.toBe(0);
    expect(checked.violations.map((v) => `${v.rule}: ${v.from}`).sort()).toEqual([
      "gateway-channels-know-no-core: apps/gateway/src/channels/telegram/inbound.ts",
      "gateway-core-knows-only-the-channel-contract: apps/gateway/src/pipeline/run-turn.ts",
    ]);
  });

  it("fails on a room reaching into the pipeline's steps, and storage importing a caller", async () => {
    const checked = await check({
      "apps/gateway/src/pipeline/enqueue-turn.ts": "export const enqueue = 1;\n",
      "apps/gateway/src/pipeline/types.ts": "export interface Services { now: number }\n",
      "apps/gateway/src/commands/stop.ts":
        'import { enqueue } from "../pipeline/enqueue-turn.js";\nexport const stop = enqueue;\n',
      "apps/gateway/src/state/store.ts":
        'import type { Services } from "../pipeline/types.js";\nexport type Store = Services;\n',
    });
    expect(checked.code).not.toBe(0);
    expect(checked.violations.map((v) => `${v.rule}: ${v.from}`).sort()).toEqual([
      "gateway-pipeline-steps-stay-inside: apps/gateway/src/commands/stop.ts",
      "gateway-storage-knows-no-callers: apps/gateway/src/state/store.ts",
    ]);
  });

  it("fails on production code importing node:async_hooks, and lets a test use it", async () => {
    const checked = await check({
      "apps/gateway/src/session/scope.ts":
        'import { AsyncLocalStorage } from "node:async_hooks";\nexport const scope = new AsyncLocalStorage();\n',
      "packages/media/src/hooks.ts":
        'import { createHook } from "async_hooks";\nexport const hook = createHook({});\n',
      "apps/gateway/src/session/scope.test.ts":
        'import { AsyncLocalStorage } from "node:async_hooks";\nexport const probe = new AsyncLocalStorage();\n',
    });
    expect(checked.code).not.toBe(0);
    expect(checked.violations.map((v) => `${v.rule}: ${v.from} → ${v.to}`).sort()).toEqual([
      "no-async-local-storage: apps/gateway/src/session/scope.ts → async_hooks",
      "no-async-local-storage: packages/media/src/hooks.ts → async_hooks",
    ]);
  });

  it("passes the gateway's allowed directions, and tests that drive the whole gateway", async () => {
    const checked = await check({
      "apps/gateway/src/defaults.ts": "export const Defaults = { retries: 3 };\n",
      "apps/gateway/src/log.ts":
        'import { Defaults } from "./defaults.js";\nexport const log = Defaults.retries;\n',
      "apps/gateway/src/channels/types.ts": "export interface ChatTarget { chatId: string }\n",
      "apps/gateway/src/sqlite/worker.ts":
        'import { Defaults } from "../defaults.js";\nexport const worker = Defaults;\n',
      "apps/gateway/src/session/key.ts":
        'import type { ChatTarget } from "../channels/types.js";\nexport type Key = ChatTarget;\n',
      "apps/gateway/src/state/store.ts":
        'import { worker } from "../sqlite/worker.js";\n' +
        'import type { Key } from "../session/key.js";\n' +
        "export type Store = Key;\nexport const store = worker;\n",
      "apps/gateway/src/durable/step-keys.ts":
        'import { store } from "../state/store.js";\nimport { log } from "../log.js";\n' +
        "export const stepKeys = [store, log];\n",
      "apps/gateway/src/commands/parse.ts": "export const parse = 1;\n",
      "apps/gateway/src/pipeline/types.ts": "export interface Services { now: number }\n",
      "apps/gateway/src/commands/stop.ts":
        'import type { Services } from "../pipeline/types.js";\nexport type Stop = Services;\n',
      "apps/gateway/src/channels/telegram/inbound.ts":
        'import { parse } from "../../commands/parse.js";\n' +
        'import { stepKeys } from "../../durable/step-keys.js";\n' +
        'import type { ChatTarget } from "../types.js";\n' +
        "export type Target = ChatTarget;\nexport const inbound = [parse, stepKeys];\n",
      "apps/gateway/src/pipeline/pipeline.ts":
        'import type { ChatTarget } from "../channels/types.js";\n' +
        'import type { Stop } from "../commands/stop.js";\n' +
        'import { stepKeys } from "../durable/step-keys.js";\n' +
        "export type Handled = [ChatTarget, Stop];\nexport const pipeline = stepKeys;\n",
      "apps/gateway/src/gateway.ts":
        'import { inbound } from "./channels/telegram/inbound.js";\n' +
        'import { pipeline } from "./pipeline/pipeline.js";\nexport const gateway = [inbound, pipeline];\n',
      "apps/gateway/src/state/store.test.ts":
        'import { gateway } from "../gateway.js";\nexport const driven = gateway;\n',
    });
    expect(checked.violations).toEqual([]);
    expect(checked.code).toBe(0);
  });
});
