import { type ChildProcess, execFile, spawn } from "node:child_process";
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CliRun, runCli } from "./harness/cli.js";
import { createTempHome, TestImage, uniqueProfileName, waitUntil } from "./harness/gateway-home.js";

/**
 * The CLI as an operator meets it outside a service manager (docs/operations.md, "Running as
 * a service"): `--version`, `pnpm mediagate` on a clone that is not built yet, and Ctrl-C under
 * `pnpm mediagate start`, all through real child processes.
 */
const RepoRoot = fileURLToPath(new URL("../../", import.meta.url));
const BinPath = join(RepoRoot, "apps/gateway/bin/mediagate.js");

async function gatewayVersion(): Promise<string> {
  const pkg: unknown = JSON.parse(
    await readFile(join(RepoRoot, "apps/gateway/package.json"), "utf8"),
  );
  if (typeof pkg === "object" && pkg !== null && "version" in pkg) return String(pkg.version);
  throw new Error("apps/gateway/package.json has no version");
}

/** Runs `command args` in `cwd` in a process group of its own, as a shell runs a foreground job. */
function spawnJob(
  command: string,
  args: readonly string[],
  options: { cwd: string; home: string },
): { child: ChildProcess; ended: Promise<CliRun>; output: () => string } {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: options.home },
    stdio: ["pipe", "pipe", "pipe"],
    detached: true,
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const ended = new Promise<CliRun>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr, output: stdout + stderr }));
  });
  return { child, ended, output: () => stdout + stderr };
}

/** Runs `command args` to the end with exactly `env`; its exit code and output. */
function runJob(
  command: string,
  args: readonly string[],
  options: { cwd: string; env: Record<string, string> },
): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd: options.cwd, env: options.env }, (error, stdout, stderr) => {
      if (error !== null && typeof error.code !== "number") return reject(error);
      const code = error === null ? 0 : Number(error.code);
      resolve({ code, stdout, stderr, output: stdout + stderr });
    });
  });
}

/** Kills what is left of a job's process group (nothing, when the test passed). */
function killGroup(child: ChildProcess | undefined): void {
  if (child?.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // The group is gone already.
  }
}

describe("mediagate --version", () => {
  it("prints the gateway package's version, from the built CLI and from the bin", async () => {
    const version = await gatewayVersion();
    const home = await createTempHome("version");
    try {
      const built = await runCli(["--version"], { home });
      expect(built).toMatchObject({ code: 0, stdout: `${version}\n` });
      const viaBin = await runJob(process.execPath, [BinPath, "--version"], {
        cwd: home,
        env: { HOME: home },
      });
      expect(viaBin).toMatchObject({ code: 0, stdout: `${version}\n` });
    } finally {
      await rm(home, { recursive: true, force: true });
    }
  });
});

describe("scripts/link-bin.sh", () => {
  it("puts a mediagate on PATH that runs this clone's CLI from any directory", async () => {
    const dir = await createTempHome("bin");
    try {
      const env = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: dir };
      const linked = await runJob("bash", [join(RepoRoot, "scripts/link-bin.sh")], {
        cwd: dir,
        env: { ...env, MEDIAGATE_BIN_DIR: join(dir, "bin") },
      });
      expect(linked.code).toBe(0);
      expect(linked.stdout).toContain(`linked ${join(dir, "bin/mediagate")} -> ${BinPath}`);
      const version = await runJob("mediagate", ["--version"], {
        cwd: dir,
        env: { ...env, PATH: `${join(dir, "bin")}:${env.PATH}` },
      });
      expect(version).toMatchObject({ code: 0, stdout: `${await gatewayVersion()}\n` });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("pnpm mediagate before the first build", () => {
  let clone = "";

  beforeAll(async () => {
    // A clone as it is before `pnpm install && pnpm build`: the root package.json and the
    // gateway's bin, no dist, no node_modules.
    clone = await createTempHome("unbuilt");
    await mkdir(join(clone, "apps/gateway/bin"), { recursive: true });
    await copyFile(join(RepoRoot, "package.json"), join(clone, "package.json"));
    await copyFile(BinPath, join(clone, "apps/gateway/bin/mediagate.js"));
  });

  afterAll(async () => {
    await rm(clone, { recursive: true, force: true });
  });

  it("says what to run instead of printing a stack trace", async () => {
    const job = spawnJob("pnpm", ["mediagate", "doctor"], { cwd: clone, home: clone });
    job.child.stdin?.end();
    const ended = await job.ended;
    expect(ended.code).not.toBe(0);
    expect(ended.stderr).toContain("mediagate: not built yet");
    expect(ended.stderr).toContain("`pnpm install && pnpm build`");
    expect(ended.output).not.toMatch(/^\s+at /m);
    expect(ended.output).not.toContain("ERR_MODULE_NOT_FOUND");
  });
});

describe("Ctrl-C under pnpm mediagate start", () => {
  let home = "";
  let job: ReturnType<typeof spawnJob> | undefined;

  beforeAll(async () => {
    home = await createTempHome("ctrl-c");
  });

  afterAll(async () => {
    killGroup(job?.child);
    await rm(home, { recursive: true, force: true });
  });

  it("drains and exits 0, and pnpm reports no failure", async () => {
    const config = join(home, "mediagate.yaml");
    await writeFile(
      config,
      [
        `home: ${join(home, "home")}`,
        "profiles:",
        `  - name: ${uniqueProfileName("ctrlc")}`,
        `    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }`,
        "",
      ].join("\n"),
    );
    // The console channel keeps reading stdin (left open here), as it does on a terminal.
    job = spawnJob("pnpm", ["mediagate", "start", "--config", config], { cwd: RepoRoot, home });
    const running = job;
    await waitUntil(() => running.output().includes("mediagate: serving"), "the console to serve");
    // What a terminal does on Ctrl-C: SIGINT to every process of the foreground job.
    process.kill(-(running.child.pid ?? 0), "SIGINT");
    const ended = await running.ended;
    expect(ended.stderr).toContain("SIGINT: stopping");
    expect(ended.output).not.toContain("ELIFECYCLE");
    expect(ended.code).toBe(0);
  });
});
