import { chmod, chown, mkdir, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./harness/cli.js";
import { createTempHome, TestImage } from "./harness/gateway-home.js";

/**
 * Case 2 of the sandbox-boundary issue, host side, through the real CLI: homes are made 0700,
 * and `start` refuses (and `doctor` reports) a home that other host users can enter, with the
 * fix on the same line.
 */
describe("private homes", () => {
  let dir = "";
  beforeAll(async () => {
    dir = await createTempHome("cli-homes");
  });
  afterAll(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  async function configFor(home: string, profile = "default"): Promise<string> {
    const file = join(dir, `${profile}-${Math.random().toString(16).slice(2)}.yaml`);
    await writeFile(
      file,
      `home: ${home}\nprofiles:\n  - name: ${profile}\n    sandbox: { image: ${TestImage} }\n`,
    );
    return file;
  }

  const modeOf = async (path: string) => (await stat(path)).mode & 0o777;

  it("start creates the root and profile homes 0700 and runs", async () => {
    const home = join(dir, "fresh", "mediagate");
    const run = await runCli(["start", "--config", await configFor(home, "solo")], { home: dir });
    expect(run.code, run.output).toBe(0);
    expect(await modeOf(home)).toBe(0o700);
    expect(await modeOf(join(home, "profiles"))).toBe(0o700);
    expect(await modeOf(join(home, "profiles", "solo"))).toBe(0o700);
  });

  it("start refuses a home other host users can enter, naming it and the fix", async () => {
    const home = join(dir, "shared-home");
    await mkdir(home);
    await chmod(home, 0o755);
    const file = await configFor(home);
    const run = await runCli(["start", "--config", file], { home: dir });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(
      `home: ${home} is reachable by other host users (mode 0755); fix: chmod 700 ${home}`,
    );
    expect(run.stderr).not.toContain("serving");

    const doctor = await runCli(["doctor", "--config", file], { home: dir });
    expect(doctor.code).toBe(1);
    expect(doctor.stdout).toContain(`✖ home: ${home} is reachable by other host users`);

    await chmod(home, 0o700);
    const fixed = await runCli(["start", "--config", file], { home: dir });
    expect(fixed.code, fixed.output).toBe(0);
  });

  it("start refuses a profile home that is group-writable inside a private root", async () => {
    const home = join(dir, "profile-shared");
    await mkdir(join(home, "profiles", "work"), { recursive: true, mode: 0o700 });
    await chmod(join(home, "profiles", "work"), 0o770);
    const run = await runCli(["start", "--config", await configFor(home, "work")], { home: dir });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(`fix: chmod 700 ${join(home, "profiles", "work")}`);
  });

  it.runIf(process.geteuid?.() === 0)("start refuses a home owned by another user", async () => {
    const home = join(dir, "foreign-home");
    await mkdir(home, { mode: 0o700 });
    await chown(home, 65534, 65534);
    const run = await runCli(["start", "--config", await configFor(home)], { home: dir });
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain(`${home} is owned by uid 65534, not by this user (uid 0)`);
  });
});
