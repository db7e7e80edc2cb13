import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { SqliteStateStore, stateDbPath } from "../state/store.js";
import { UsageCommandError, UsageHeader, usageReport } from "./usage.js";

const Day = 86_400_000;
/** 2027-01-15, noon UTC. */
const Now = Date.parse("2027-01-15T12:00:00Z");

describe("mediagate usage", () => {
  let dir = "";
  let config = "";

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mg-usage-cli-"));
    config = join(dir, "mediagate.yaml");
    await writeFile(
      config,
      [
        `home: ${dir}`,
        "profiles:",
        "  - name: main",
        "    telegram: { token: '1:a' }",
        "    agent:",
        "      kind: openai",
        "      models:",
        "        - { name: big, baseUrl: http://127.0.0.1:1/v1, model: m }",
        "      budget: { dailyTokens: 100 }",
        "  - name: quiet",
        "    telegram: { token: '2:b' }",
        "",
      ].join("\n"),
    );
    const [main] = (await loadConfig({ path: config, env: emptyEnv(dir) })).profiles;
    let clock = Now - 10 * Day;
    const store = await SqliteStateStore.open(stateDbPath(main!.home), { now: () => clock });
    const call = (user: string | undefined, input: number, output: number, cost: number) =>
      store.recordUsage({
        sessionKey: `k-${user}`,
        sessionId: "s",
        user,
        model: "big",
        inputTokens: input,
        outputTokens: output,
        cachedTokens: 1,
        cost,
      });
    try {
      await call("telegram:1", 10, 5, 0.5); // ten days ago
      clock = Now - 3 * Day;
      await call("telegram:1", 20, 5, 0.25); // three days ago
      clock = Now;
      await call("discord:2", 100, 10, 2);
      await call(`telegram:\x1b[31m3\n`, 1, 1, 0);
    } finally {
      await store.close();
    }
  });

  afterAll(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  const run = async (profile?: string) => {
    const lines: string[] = [];
    const code = await usageReport(
      { config, env: emptyEnv(dir), now: () => Now, ...(profile ? { profile } : {}) },
      (line) => lines.push(line),
    );
    return { code, lines };
  };

  it("prints the profile's and each user's totals for today, 7 days and all time", async () => {
    const { code, lines } = await run();
    expect(code).toBe(0);
    expect(lines[0]).toBe(UsageHeader);
    expect(lines.slice(1, 7)).toEqual([
      "main\t*\ttoday\t2\t101\t2\t11\t2.00",
      "main\t*\t7d\t3\t121\t3\t16\t2.25",
      "main\t*\tall\t4\t131\t4\t21\t2.75",
      "main\tdiscord:2\ttoday\t1\t100\t1\t10\t2.00",
      "main\tdiscord:2\t7d\t1\t100\t1\t10\t2.00",
      "main\tdiscord:2\tall\t1\t100\t1\t10\t2.00",
    ]);
    expect(lines.slice(7, 10)).toEqual([
      "main\ttelegram:1\ttoday\t0\t0\t0\t0\t0.00",
      "main\ttelegram:1\t7d\t1\t20\t1\t5\t0.2500",
      "main\ttelegram:1\tall\t2\t30\t2\t10\t0.7500",
    ]);
    expect(lines[10]!.split("\t").slice(0, 3)).toEqual(["main", "telegram:\\x1b[31m3\\n", "today"]);
    expect(lines.at(-1)).toBe(
      "profile main: daily budget reached (112 of 100 tokens today); days are UTC",
    );
    // the profile without a database prints nothing
    expect(lines.some((line) => line.startsWith("quiet"))).toBe(false);
  });

  it("refuses an unknown profile, naming the known ones", async () => {
    await expect(run("nope")).rejects.toThrow(UsageCommandError);
    await expect(run("nope")).rejects.toThrow(/"main", "quiet"/);
  });

  it("says so when nothing was recorded", async () => {
    expect((await run("quiet")).lines).toEqual(["no model calls recorded"]);
  });
});
