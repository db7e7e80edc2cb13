import { chmod, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { emptyEnv, loadConfig, SqliteStateStore, stateDbPath } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./harness/cli.js";
import { createTempHome, TestImage, uniqueProfileName } from "./harness/gateway-home.js";

/** `mediagate usage` as an operator runs the built CLI (docs/operations.md, "Model usage"). */
describe("mediagate usage", () => {
  let dir = "";
  let config = "";
  const profile = uniqueProfileName("cli-usage");

  beforeAll(async () => {
    dir = await createTempHome("cli-usage");
    config = join(dir, "mediagate.yaml");
    const home = join(dir, "home");
    await writeFile(
      config,
      [
        `home: ${home}`,
        "profiles:",
        `  - name: ${profile}`,
        `    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }`,
        "    agent:",
        "      kind: openai",
        "      models: [{ name: m, baseUrl: http://127.0.0.1:1/v1, model: m, prices: { input: 1, output: 1 } }]",
        "      budget: { dailyCost: 1 }",
        "",
      ].join("\n"),
    );
    const [entry] = (await loadConfig({ path: config, env: emptyEnv(dir) })).profiles;
    const store = await SqliteStateStore.open(stateDbPath(entry!.home));
    try {
      await store.recordUsage({
        sessionKey: "agent:x:telegram:dm:1",
        sessionId: "s",
        user: "telegram:1",
        model: "m",
        inputTokens: 1200,
        outputTokens: 300,
        cachedTokens: 200,
        cost: 0.0123,
      });
    } finally {
      await store.close();
    }
  });

  afterAll(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  it("prints the header, the profile's and the user's rows, and the budget note", async () => {
    const run = await runCli(["usage", "--config", config], { home: dir });
    expect(run.stderr).toBe("");
    expect(run.code).toBe(0);
    expect(run.stdout.trimEnd().split("\n")).toEqual([
      "PROFILE\tUSER\tPERIOD\tCALLS\tINPUT\tCACHED\tOUTPUT\tCOST",
      `${profile}\t*\ttoday\t1\t1200\t200\t300\t0.0123`,
      `${profile}\t*\t7d\t1\t1200\t200\t300\t0.0123`,
      `${profile}\t*\tall\t1\t1200\t200\t300\t0.0123`,
      `${profile}\ttelegram:1\ttoday\t1\t1200\t200\t300\t0.0123`,
      `${profile}\ttelegram:1\t7d\t1\t1200\t200\t300\t0.0123`,
      `${profile}\ttelegram:1\tall\t1\t1200\t200\t300\t0.0123`,
      `profile ${profile}: daily budget not reached; days are UTC`,
    ]);
  });

  it("exits 1 naming the profiles for an unknown -p", async () => {
    const run = await runCli(["usage", "-p", "nosuch", "--config", config], { home: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`unknown profile "nosuch": the config has "${profile}"`);
  });

  it("run as another user than the home's, exits 1 naming the file instead of 'nothing recorded'", async () => {
    // The other user reaches the config, as in /etc/mediagate; the home stays private to root.
    await chmod(dir, 0o711);
    await chmod(config, 0o644);
    await chmod(join(dir, "home"), 0o700);
    const nobody = { uid: 65534, gid: 65534 };
    const run = await runCli(["usage", "--config", config], { home: dir, user: nobody });
    const [entry] = (await loadConfig({ path: config, env: emptyEnv(dir) })).profiles;
    expect(run.stdout).toBe("");
    expect(run.stderr).toBe(
      `mediagate: cannot look at ${stateDbPath(entry!.home)} as uid 65534 (EACCES): run mediagate as the user the gateway runs as, who owns its home\n`,
    );
    expect(run.code).toBe(1);
  });
});
