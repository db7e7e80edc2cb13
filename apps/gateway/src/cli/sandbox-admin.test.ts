import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { connectDocker, Sandbox } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost, testEnvironment } from "../../../../test-support/engine.js";
import { readEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import {
  ListHeader,
  SandboxCommandError,
  sandboxList,
  sandboxReap,
  sandboxRemove,
  UnknownProfileError,
} from "./sandbox-admin.js";

/** The line `sandbox reap` starts each profile with, naming the minimum age it applied. */
const ageLine = (
  profile: string,
  age: string,
  source = "default: 2 × lifetimeSeconds, at least 2 minutes",
) =>
  `profile ${profile}: reaping exited containers older than ${age} (${source}) and containers of gateway processes that are gone`;

/** Runs against the real Docker engine. */
describe("mediagate sandbox ls | rm | reap", () => {
  const profile = `unit-cli-${randomBytes(4).toString("hex")}`;
  let dir = "";
  let file = "";
  let sandbox: Sandbox;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mg-sbx-cli-"));
    file = join(dir, "mediagate.yaml");
    await writeFile(
      file,
      `home: ${dir}\nprofiles:\n  - name: ${profile}\n    sandbox: { image: mediagate-sandbox:test, diskLimitBytes: 0 }\n`,
    );
    const p = (await loadConfig({ path: file, env: readEnv(testEnvironment(dir)) })).profiles[0]!;
    sandbox = new Sandbox({
      engine: connectDocker({ host: testDockerHost() }),
      profile,
      profileHome: p.home,
      rootHome: dir,
      settings: { ...p.sandbox, orphanReaper: false },
    });
  });

  afterAll(async () => {
    for (const c of await sandbox.list()) await sandbox.remove(c.id);
    await sandbox.shutdown();
    await rm(dir, { recursive: true, force: true });
  });

  const run = async (fn: (print: (l: string) => void) => Promise<number>) => {
    const lines: string[] = [];
    const code = await fn((l) => lines.push(l));
    return { code, lines };
  };
  const opts = () => ({ config: file, env: readEnv(testEnvironment(dir)) });

  it("lists this profile's containers and removes one by slot key", async () => {
    const slot = `profile:${profile}`;
    const { containerId } = await sandbox.acquire(slot);
    const listed = await run((p) => sandboxList(opts(), p));
    expect(listed.lines).toHaveLength(2);
    expect(listed.lines[0]).toBe("CONTAINER\tPROFILE\tSLOT\tSTATE\tIMAGE\tCREATED");
    expect(listed.lines[1]).toMatch(new RegExp(`^${containerId.slice(0, 12)}\\t${profile}\\t`));
    const removed = await run((p) => sandboxRemove(slot, opts(), p));
    expect(removed.code).toBe(0);
    expect(removed.lines[0]).toContain(`removed ${containerId.slice(0, 12)}`);
    expect((await run((p) => sandboxList(opts(), p))).lines).toEqual(["no containers"]);
  });

  it("removes by id prefix, and says so when nothing matches", async () => {
    const { containerId } = await sandbox.acquire("session:x");
    expect((await run((p) => sandboxRemove(containerId.slice(0, 12), opts(), p))).code).toBe(0);
    expect(await sandbox.list()).toEqual([]);
    // A failure is the command's error (stderr, exit 1), not a line of its output.
    const printed: string[] = [];
    const none = sandboxRemove("ffffffffffff", opts(), (l) => printed.push(l));
    await expect(none).rejects.toThrow(
      new SandboxCommandError(
        "no container of this gateway matches ffffffffffff (see `mediagate sandbox ls`)",
      ),
    );
    await expect(none).rejects.toMatchObject({ code: "MG_CLI_SANDBOX_REFUSED" });
    await expect(sandboxRemove(" ", opts(), (l) => printed.push(l))).rejects.toThrow(
      "name a container id (prefix) or a slot key",
    );
    expect(printed).toEqual([]);
  });

  it("refuses a target that names two containers (a slot key that is another's id prefix), removing none", async () => {
    const { containerId } = await sandbox.acquire("session:y");
    const prefix = containerId.slice(0, 8);
    // A task slot whose key happens to be the first container's id prefix.
    const other = (await sandbox.acquire(prefix)).containerId;
    try {
      const printed: string[] = [];
      const refused = await sandboxRemove(prefix, opts(), (l) => printed.push(l)).catch(
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(SandboxCommandError);
      expect(printed).toEqual([]);
      const line = (refused as Error).message;
      expect(line).toMatch(new RegExp(`^${prefix} matches 2 containers: `));
      expect(line).toContain(`${containerId.slice(0, 12)} (profile ${profile}, slot session_y)`);
      expect(line).toContain(`${other.slice(0, 12)} (profile ${profile}, slot ${prefix})`);
      expect(line).toMatch(/; nothing was removed: give more of the id/);
      expect((await sandbox.list()).map((c) => c.id).sort()).toEqual([containerId, other].sort());
    } finally {
      await sandbox.remove(containerId);
      await sandbox.remove(other);
    }
  });

  it("reap leaves running containers alone", async () => {
    await sandbox.acquire("session:reap-check");
    const reaped = await run((p) => sandboxReap(opts(), p));
    // `session:x`'s dir (its container removed above) belongs to this live process: kept.
    expect(reaped).toEqual({
      code: 0,
      lines: [ageLine(profile, "10 minutes"), `profile ${profile}: nothing to reap`],
    });
    expect(await sandbox.list()).toHaveLength(1);
    for (const c of await sandbox.list()) await sandbox.remove(c.id);
  });

  it("reap --older-than reaps exited containers older than the age it names, and no younger", async () => {
    // A slot this test alone uses: an earlier test removed the profile slot's container
    // behind this sandbox's back, which it would hand out again.
    const { containerId } = await sandbox.acquire("session:aged");
    await promisify(execFile)("docker", ["stop", "-t", "0", containerId]);
    const inMinutes = (minutes: number) => () => Date.now() + minutes * 60_000;

    const young = await run((p) =>
      sandboxReap({ ...opts(), now: inMinutes(30), olderThanSeconds: 2 * 3600 }, p),
    );
    expect(young).toEqual({
      code: 0,
      lines: [ageLine(profile, "2 hours", "--older-than"), `profile ${profile}: nothing to reap`],
    });
    const byDefault = await run((p) => sandboxReap({ ...opts(), now: inMinutes(5) }, p));
    expect(byDefault.lines).toEqual([
      ageLine(profile, "10 minutes"),
      `profile ${profile}: nothing to reap`,
    ]);

    const old = await run((p) =>
      sandboxReap({ ...opts(), now: inMinutes(30), olderThanSeconds: 20 * 60 }, p),
    );
    expect(old).toEqual({
      code: 0,
      lines: [
        ageLine(profile, "20 minutes", "--older-than"),
        `reaped ${containerId.slice(0, 12)} (profile ${profile})`,
      ],
    });
    expect(await sandbox.list()).toEqual([]);
  });

  it("reap refuses an --older-than under a minute, before touching anything", async () => {
    await expect(sandboxReap({ ...opts(), olderThanSeconds: 30 }, () => {})).rejects.toThrow(
      "--older-than must be at least 1 minute, got 30 seconds: a younger exited container may be one a running gateway is about to start again",
    );
  });

  it("reap refuses an --older-than no container can reach, before touching anything", async () => {
    // `--older-than 30y` for 30m: every exited container is younger, and nothing would be reaped.
    const lines: string[] = [];
    await expect(
      sandboxReap({ ...opts(), olderThanSeconds: 30 * 365 * 86_400 }, (line) => lines.push(line)),
    ).rejects.toThrow(
      "--older-than must be at most 3650 days, got 10950 days: no container exited that long ago, so it would reap none (write e.g. 30m, 2h or 7d)",
    );
    await expect(sandboxReap({ ...opts(), olderThanSeconds: 8.64e26 }, () => {})).rejects.toThrow(
      "--older-than must be at most 3650 days",
    );
    expect(lines).toEqual([]);
    // The bound itself is taken.
    await expect(
      sandboxReap({ ...opts(), olderThanSeconds: 3650 * 86_400 }, () => {}),
    ).resolves.toBe(0);
  });

  it("an unknown -p is an error naming the profile and the known ones, for every subcommand", async () => {
    const unknown = { ...opts(), profile: "nosuch" };
    const message = `unknown profile "nosuch": the config has "${profile}" (use -p with one of them, or leave it out for all)`;
    for (const call of [
      () => sandboxList(unknown, () => {}),
      () => sandboxRemove("x", unknown, () => {}),
      () => sandboxReap(unknown, () => {}),
    ]) {
      const error = await call().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(UnknownProfileError);
      expect(error).toMatchObject({ message, profile: "nosuch", known: [profile] });
    }
    expect(ListHeader.split("\t")).toHaveLength(6);
  });
});

/**
 * Two installs (two root homes) on one engine with the same profile name, as two gateways
 * with different `MEDIAGATE_HOME`s would be: each CLI sees and touches only its own.
 */
describe("mediagate sandbox ls | rm | reap with two installs on one engine", () => {
  const profile = `unit-inst-${randomBytes(4).toString("hex")}`;
  const installs: { dir: string; file: string; sandbox: Sandbox }[] = [];
  /** The docker CLI against the same engine: sets up what the gateway did not make. */
  const docker = async (...args: string[]) =>
    (await promisify(execFile)("docker", args)).stdout.trim();

  beforeAll(async () => {
    for (const name of ["one", "two"]) {
      const dir = await mkdtemp(join(tmpdir(), `mg-sbx-${name}-`));
      const file = join(dir, "mediagate.yaml");
      await writeFile(
        file,
        `home: ${dir}\nprofiles:\n  - name: ${profile}\n    sandbox: { image: mediagate-sandbox:test, diskLimitBytes: 0 }\n`,
      );
      const p = (await loadConfig({ path: file, env: readEnv(testEnvironment(dir)) })).profiles[0]!;
      const sandbox = new Sandbox({
        engine: connectDocker({ host: testDockerHost() }),
        profile,
        profileHome: p.home,
        rootHome: dir,
        settings: { ...p.sandbox, orphanReaper: false },
      });
      installs.push({ dir, file, sandbox });
    }
  });

  afterAll(async () => {
    const leftovers = await docker("ps", "-aq", "--filter", `label=mediagate.profile=${profile}`);
    if (leftovers !== "") await docker("rm", "-f", "-v", ...leftovers.split("\n"));
    for (const { dir, sandbox } of installs) {
      await sandbox.shutdown();
      await rm(dir, { recursive: true, force: true });
    }
  });

  const run = async (fn: (print: (l: string) => void) => Promise<number>) => {
    const lines: string[] = [];
    const code = await fn((l) => lines.push(l));
    return { code, lines };
  };
  const opts = (index: number, now?: () => number) => ({
    config: installs[index]!.file,
    env: readEnv(testEnvironment(installs[index]!.dir)),
    now,
  });
  const running = async (id: string) =>
    (await docker("inspect", "-f", "{{.State.Running}}", id).catch(() => "")) === "true";

  it("never lists, removes or reaps the other install's containers", async () => {
    const slot = `profile:${profile}`;
    const mine = (await installs[0]!.sandbox.acquire(slot)).containerId;
    const theirs = (await installs[1]!.sandbox.acquire(slot)).containerId;
    expect(theirs).not.toBe(mine);

    const listed = await run((p) => sandboxList(opts(0), p));
    expect(listed.lines.map((l) => l.split("\t")[0])).toEqual(["CONTAINER", mine.slice(0, 12)]);

    await expect(sandboxRemove(theirs.slice(0, 12), opts(0), () => {})).rejects.toThrow(
      `no container of this gateway matches ${theirs.slice(0, 12)}`,
    );
    expect(await running(theirs)).toBe(true);

    const bySlot = await run((p) => sandboxRemove(slot, opts(0), p));
    expect(bySlot.lines[0]).toContain(`removed ${mine.slice(0, 12)}`);
    expect(await running(theirs)).toBe(true);

    await docker("stop", "-t", "0", theirs);
    const later = () => Date.now() + 60 * 60_000;
    const reaped = await run((p) => sandboxReap(opts(0, later), p));
    expect(reaped.lines).toEqual([
      ageLine(profile, "10 minutes"),
      `profile ${profile}: nothing to reap`,
    ]);
    expect(await docker("inspect", "-f", "{{.State.Status}}", theirs)).toBe("exited");
    const own = await run((p) => sandboxReap(opts(1, later), p));
    expect(own.lines).toEqual([
      ageLine(profile, "10 minutes"),
      `reaped ${theirs.slice(0, 12)} (profile ${profile})`,
    ]);
  });

  it("notes containers without an install label, and reap retires only those bound to this install", async () => {
    const slot = `profile:${profile}`;
    const legacy = async (slotDir: string) => {
      await mkdir(join(slotDir, "workspace"), { recursive: true });
      // As a version before install labels made it: no mediagate.install label.
      return docker(
        ...["run", "-d", "--init", "--network", "none", "--label", "mediagate.agent=1", "--label"],
        ...[`mediagate.profile=${profile}`, "--label", "mediagate.slot=x"],
        ...["-v", `${join(slotDir, "workspace")}:/workspace`],
        ...["mediagate-sandbox:test", "sleep", "infinity"],
      );
    };
    const ours = await legacy(installs[0]!.sandbox.slotDirectory(slot));
    const foreign = await legacy(installs[1]!.sandbox.slotDirectory(slot));

    const listed = await run((p) => sandboxList(opts(0), p));
    const notes = listed.lines.filter((l) => l.startsWith("legacy\t"));
    expect(notes.find((l) => l.includes(ours.slice(0, 12)))).toContain("retired by");
    expect(notes.find((l) => l.includes(foreign.slice(0, 12)))).toContain("left alone");

    const reaped = await run((p) => sandboxReap(opts(0), p));
    expect(reaped.lines).toEqual([
      ageLine(profile, "10 minutes"),
      `reaped ${ours.slice(0, 12)} (profile ${profile})`,
    ]);
    expect(await running(foreign)).toBe(true);
  });
});
