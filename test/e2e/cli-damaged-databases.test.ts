import { existsSync } from "node:fs";
import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { damageHeader, damagePage, pageCountOf } from "../../test-support/sqlite-damage.js";
import { runCli } from "./harness/cli.js";
import { createTempHome, TestImage, uniqueProfileName } from "./harness/gateway-home.js";

/**
 * A damaged journal or state database, through the built CLI as an operator meets it: `start`
 * stops with one line naming the file, what is wrong and the way out; the way out,
 * `mediagate db move-aside`, moves it aside; the next `start` runs (docs/durability.md, "A
 * damaged or lost database"). The databases are written by a real `start`, damaged in place
 * with the gateway stopped.
 */
describe("a damaged database at start", () => {
  let dir = "";
  let home = "";
  let config = "";
  const profile = uniqueProfileName("cli-damaged");

  beforeAll(async () => {
    dir = await createTempHome("cli-damaged");
    home = join(dir, "home");
    config = join(dir, "mediagate.yaml");
    await writeFile(
      config,
      `home: ${home}\nprofiles:\n  - name: ${profile}\n    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }\n`,
    );
  });
  afterAll(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  const start = () => runCli(["start", "--config", config], { home: dir });

  it("a journal with a damaged header: start names the file and the way out, which works", async () => {
    const first = await start();
    expect(first.code, first.output).toBe(0);
    const journal = join(home, "journal.db");
    damageHeader(journal);

    const refused = await start();

    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(
      `mediagate: the journal ${journal} is damaged (open: file is not a database); the gateway cannot run on it; stop the gateway and run \`mediagate db move-aside ${journal}\`: it keeps the damaged file as ${journal}.damaged-<time> and the next start makes a new, empty one; lost with it: the messages received but not answered yet`,
    );
    expect(refused.stderr).not.toContain("serving");

    const moved = await runCli(["db", "move-aside", journal], { home: dir });
    expect(moved.code, moved.output).toBe(0);
    expect(moved.stdout).toMatch(
      new RegExp(`^moved ${journal} aside to ${journal}\\.damaged-\\d{8}T\\d{6}Z`),
    );
    expect(existsSync(journal)).toBe(false);

    const again = await start();
    expect(again.code, again.output).toBe(0);
    expect(again.stderr).toContain("serving");
    expect(again.stderr).not.toContain("is gone");
  });

  it("a state database with a damaged page: the same, naming the profile's file", async () => {
    const state = join(home, "profiles", profile, "state.db");
    expect(existsSync(state)).toBe(true);
    damagePage(state, pageCountOf(state));

    const refused = await start();

    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(
      new RegExp(
        `mediagate: the state database ${state} is damaged \\(open: [^\\n]+\\); stop the gateway and run \`mediagate db move-aside ${state}\``,
      ),
    );

    const moved = await runCli(["db", "move-aside", state], { home: dir });
    expect(moved.code, moved.output).toBe(0);
    expect(moved.stdout).toContain(
      "lost with it (the copy keeps them): the profile's conversation history",
    );
    expect((await start()).code).toBe(0);
  });
});
