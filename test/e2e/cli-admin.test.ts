import { open, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./harness/cli.js";
import { createTempHome, TestImage, uniqueProfileName } from "./harness/gateway-home.js";

/** The subcommands a `--help` text lists under "Commands:" (without `help` itself). */
function subcommands(help: string): string[] {
  const section = (help.split(/^Commands:$/m)[1] ?? "").split("\n\n")[0] ?? "";
  return [...section.matchAll(/^ {2}(\S+)/gm)]
    .map((match) => match[1] ?? "")
    .filter((name) => name !== "help");
}

/** `sandbox ls|rm|reap` and `--help`, as an operator runs the built CLI. */
describe("mediagate CLI details", () => {
  let dir = "";
  let config = "";
  const profile = uniqueProfileName("cli-admin");

  beforeAll(async () => {
    dir = await createTempHome("cli-admin");
    config = join(dir, "mediagate.yaml");
    await writeFile(
      config,
      `home: ${join(dir, "home")}\nprofiles:\n  - name: ${profile}\n    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }\n`,
    );
  });
  afterAll(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  it("every command and subcommand has --help with an example", async () => {
    const pending: string[][] = [[]];
    const seen: string[] = [];
    while (pending.length > 0) {
      const path = pending.shift() ?? [];
      const run = await runCli([...path, "--help"], { home: dir });
      expect(run.code, path.join(" ")).toBe(0);
      const command = ["mediagate", ...path].join(" ");
      expect(run.stdout, `${command} --help`).toMatch(
        new RegExp(`\\nExamples:\\n {2}\\$ ${command}`),
      );
      seen.push(path.join(" "));
      for (const name of subcommands(run.stdout)) pending.push([...path, name]);
    }
    // The walk found them all through the help texts themselves.
    expect(seen).toEqual(expect.arrayContaining(["start", "doctor", "sandbox ls", "sandbox reap"]));
  });

  it("sandbox ls -p with an unknown profile exits 1, naming it and the profiles there are", async () => {
    const run = await runCli(["sandbox", "ls", "-p", "nosuch", "--config", config], { home: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      `mediagate: unknown profile "nosuch": the config has "${profile}" (use -p with one of them, or leave it out for all)\n`,
    );
    expect(run.stdout).toBe("");
  });

  it("sandbox reap says the minimum age it used, which --older-than sets", async () => {
    const byDefault = await runCli(["sandbox", "reap", "--config", config], { home: dir });
    expect(byDefault.code, byDefault.output).toBe(0);
    expect(byDefault.stdout.split("\n")[0]).toBe(
      `profile ${profile}: reaping exited containers older than 10 minutes (default: 2 × lifetimeSeconds, at least 2 minutes) and containers of gateway processes that are gone`,
    );
    const set = await runCli(["sandbox", "reap", "--older-than", "90m", "--config", config], {
      home: dir,
    });
    expect(set.code, set.output).toBe(0);
    expect(set.stdout.split("\n")[0]).toContain("older than 90 minutes (--older-than)");
  });

  it("sandbox reap refuses an --older-than without a unit or under a minute", async () => {
    const bare = await runCli(["sandbox", "reap", "--older-than", "30", "--config", config], {
      home: dir,
    });
    expect(bare.code).toBe(1);
    expect(bare.stderr).toContain(
      `error: option '--older-than <duration>' argument '30' is invalid. "30" has no unit: write e.g. 30m, 30h or 30d`,
    );
    const short = await runCli(["sandbox", "reap", "--older-than", "10s", "--config", config], {
      home: dir,
    });
    expect(short.code).toBe(1);
    expect(short.stderr).toContain("--older-than must be at least 1 minute, got 10 seconds");
  });

  it("a reader that went away (| head -1) ends no command early: it finishes and exits 0, no trace", async () => {
    const run = await runCli(["status", "--config", config], { home: dir, stdout: "closed" });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
  });

  it("output lost to a full disk is said on stderr and exits 1, not as Node's stack trace", async () => {
    const full = await open("/dev/full", "w");
    try {
      const run = await runCli(["status", "--config", config], { home: dir, stdout: full.fd });
      expect(run.stderr).toBe(
        "mediagate: could not write the output (ENOSPC): the rest of it is lost; the command goes on and exits 1\n",
      );
      expect(run.code).toBe(1);
    } finally {
      await full.close();
    }
  });
});
