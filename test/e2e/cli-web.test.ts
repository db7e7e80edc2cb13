import { readFile, rm, stat, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli, spawnCli } from "./harness/cli.js";
import { createTempHome, TestImage, waitUntil } from "./harness/gateway-home.js";

/** The status of `GET /login` on 127.0.0.1:`port` with the header `Host: host`. */
function loginStatus(port: number, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const sent = request(
      { host: "127.0.0.1", port, path: "/login", headers: { host } },
      (answer) => {
        answer.resume();
        answer.on("end", () => resolve(answer.statusCode ?? 0));
      },
    );
    sent.on("error", reject);
    sent.end();
  });
}

/**
 * The web console from the command line (docs/web-console.md): `mediagate web token` makes the
 * token once, owner-only, and prints the same one after; `start` with a non-loopback
 * `web.listen` serves the console to its allowed host names only and logs a warning naming the
 * risk, and refuses a wildcard address that names none.
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

  it("start on a non-loopback address serves the console to its names only and warns about it, never printing the token", async () => {
    const home = join(dir, "exposed");
    const config = join(dir, "exposed.yaml");
    await writeFile(
      config,
      `home: ${home}\nweb: { listen: "0.0.0.0:0", allowedHosts: [gateway.example] }\nprofiles:\n  - name: default\n    sandbox: { image: ${TestImage} }\n`,
    );
    const cli = spawnCli(["start", "--config", config], { home: dir, stdin: "pipe" });
    try {
      await waitUntil(
        () => /web console at http:\/\/0\.0\.0\.0:\d+/.test(cli.stderr()),
        "the console",
      );
      const port = Number(/web console at http:\/\/0\.0\.0\.0:(\d+)/.exec(cli.stderr())?.[1]);
      expect(await loginStatus(port, `gateway.example:${port}`)).toBe(200);
      expect(await loginStatus(port, `127.0.0.1:${port}`)).toBe(200);
      // A page on a name that resolves to this host (DNS rebinding) is not answered.
      expect(await loginStatus(port, `rebound.example:${port}`)).toBe(421);
    } finally {
      cli.signal("SIGTERM");
    }
    const run = await cli.ended;
    expect(run.code, run.output).toBe(0);
    expect(run.stderr).toContain("non-loopback address");
    expect(run.stderr).toContain("plain HTTP");
    const token = (await readFile(join(home, "web-token"), "utf8")).trim();
    expect(run.output).not.toContain(token);
  });

  it("start on a wildcard address without web.allowedHosts stops at the config, saying what to add", async () => {
    const config = join(dir, "wildcard.yaml");
    await writeFile(
      config,
      `home: ${join(dir, "wildcard")}\nweb: { listen: "0.0.0.0:8787" }\nprofiles:\n  - name: default\n    sandbox: { image: ${TestImage} }\n`,
    );
    const run = await runCli(["start", "--config", config], { home: dir });
    expect(run.code, run.output).not.toBe(0);
    expect(run.stderr).toMatch(
      /web\.allowedHosts: got nothing, with web\.listen "0\.0\.0\.0:8787"/,
    );
    expect(run.stderr).toContain('allowedHosts: ["gateway.example.org"');
  });
});
