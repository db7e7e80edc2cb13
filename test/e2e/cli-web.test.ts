import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./harness/cli.js";
import { createTempHome, TestImage } from "./harness/gateway-home.js";

/**
 * The web console from the command line (docs/web-console.md): `mediagate web token` makes the
 * token once, owner-only, and prints the same one after; `start` with a non-loopback
 * `web.listen` serves the console and logs a warning naming the risk.
 */
describe("mediagate web", () => {
  let dir = "";
  beforeAll(async () => {
    dir = await createTempHome("cli-web");
  });
  afterAll(async () => {
    if (dir !== "") await rm(dir, { recursive: true, force: true });
  });

  it("web token prints the install's token, made once in the root home (0600)", async () => {
    const home = join(dir, "tokens");
    const first = await runCli(["web", "token"], { home: dir, env: { MEDIAGATE_HOME: home } });
    expect(first.code, first.output).toBe(0);
    const token = first.stdout.trim();
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await readFile(join(home, "web-token"), "utf8")).trim()).toBe(token);
    expect((await stat(join(home, "web-token"))).mode & 0o777).toBe(0o600);
    const again = await runCli(["web", "token"], { home: dir, env: { MEDIAGATE_HOME: home } });
    expect(again.stdout.trim()).toBe(token);
  });

  it("start on a non-loopback address serves the console and warns about it, never printing the token", async () => {
    const home = join(dir, "exposed");
    const config = join(dir, "exposed.yaml");
    await writeFile(
      config,
      `home: ${home}\nweb: { listen: "0.0.0.0:0" }\nprofiles:\n  - name: default\n    sandbox: { image: ${TestImage} }\n`,
    );
    const run = await runCli(["start", "--config", config], { home: dir });
    expect(run.code, run.output).toBe(0);
    expect(run.stderr).toMatch(/web console at http:\/\/0\.0\.0\.0:\d+/);
    expect(run.stderr).toContain("non-loopback address");
    expect(run.stderr).toContain("plain HTTP");
    const token = (await readFile(join(home, "web-token"), "utf8")).trim();
    expect(run.output).not.toContain(token);
  });
});
