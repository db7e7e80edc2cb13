import { open, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { waitFor } from "../../test-support/wait.js";
import { spawnCli } from "./harness/cli.js";
import { DockerObserver } from "./harness/docker-observer.js";
import {
  createTempHome,
  releaseMounts,
  TestImage,
  uniqueProfileName,
} from "./harness/gateway-home.js";

/** The child CLI makes a container before it answers: longer than the usual poll bound. */
const ConsoleWaitMs = 60_000;

/**
 * `mediagate start` on the local console, run as an operator runs it (a child process, stdin
 * and stdout piped): stdout carries the chat and nothing else, while the logs — debug lines,
 * a turn's info line and a warning — all go to stderr (docs/operations.md).
 */
describe("console mode: the chat on stdout, the logs on stderr", () => {
  const profile = uniqueProfileName("console-out");
  let dir = "";

  beforeAll(async () => {
    dir = await createTempHome("console-out");
  });

  /** A config file `name` in the test's home: the console only, drained within a second. */
  const writeConfig = async (name: string): Promise<string> => {
    const config = join(dir, name);
    await writeFile(
      config,
      [
        `home: ${join(dir, "home")}`,
        "drainTimeoutSeconds: 1",
        "profiles:",
        `  - name: ${profile}`,
        `    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }`,
        "",
      ].join("\n"),
    );
    return config;
  };

  afterAll(async () => {
    const docker = new DockerObserver();
    for (const c of await docker.containers({ "mediagate.profile": profile })) {
      await docker.removeForce(c.id);
    }
    if (dir !== "") {
      await releaseMounts(dir);
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("keeps warnings and log lines out of stdout", async () => {
    const config = await writeConfig("mediagate.yaml");
    const cli = spawnCli(["start", "--config", config], {
      home: dir,
      env: { LOG_LEVEL: "debug" },
      stdin: "pipe",
      timeoutMs: 120_000,
    });
    const input = cli.stdin;
    if (input === undefined) throw new Error("no stdin");
    // Whatever fails below, the gateway does not outlive the test.
    onTestFinished(() => cli.signal("SIGKILL"));
    input.write("echo hello\n");
    await waitFor(() => expect(cli.stdout()).toContain("hello\n"), ConsoleWaitMs);
    // A turn still running when the input ends is cut off by the stop: a warning.
    input.write("sleep 30\n");
    await waitFor(
      () => expect(cli.stderr()).toMatch(/"messageId":"2","step":"runTurn","msg":"pipeline step"/),
      ConsoleWaitMs,
    );
    input.end();
    const { code, stdout, stderr } = await cli.ended;
    expect(code, stderr).toBe(0);

    expect(stdout).toBe("hello\n");
    const lines = stderr.split("\n").filter((line) => line !== "");
    const logs = lines
      .filter((line) => !line.startsWith("mediagate: "))
      .map((line) => JSON.parse(line) as { level: number; msg: string; exit?: string });
    expect(logs.some((l) => l.level === 40 && l.msg.startsWith("turn cut off"))).toBe(true);
    expect(logs.filter((l) => l.msg === "turn finished").map((l) => l.exit)).toEqual([
      "ok",
      "cut_off",
    ]);
    expect(logs.some((l) => l.level === 20)).toBe(true);
  });

  it("ends the session when stdout's reader goes away, as at the input's end: exit 0, no trace", async () => {
    const config = await writeConfig("closed-out.yaml");
    // `mediagate start | head -1` once head has its line: the reader is gone before the reply.
    const cli = spawnCli(["start", "--config", config], {
      home: dir,
      stdin: "pipe",
      stdout: "closed",
      timeoutMs: 120_000,
    });
    onTestFinished(() => cli.signal("SIGKILL"));
    // The input stays open: only the lost reader ends the session.
    cli.stdin?.write("echo hello\n");
    const { code, stderr } = await cli.ended;
    expect(stderr).not.toContain("uncaught");
    expect(stderr).not.toContain("EPIPE\n    at");
    expect(stderr).toContain("the console's output was closed (its reader went away): stopping");
    expect(code, stderr).toBe(0);
  });

  it("stops with exit 1 when stdout fails otherwise (a full disk), saying so, no trace", async () => {
    const config = await writeConfig("full-out.yaml");
    const full = await open("/dev/full", "w");
    try {
      const cli = spawnCli(["start", "--config", config], {
        home: dir,
        stdin: "pipe",
        stdout: full.fd,
        timeoutMs: 120_000,
      });
      onTestFinished(() => cli.signal("SIGKILL"));
      cli.stdin?.write("echo hello\n");
      const { code, stderr } = await cli.ended;
      expect(stderr).not.toContain("uncaught");
      expect(stderr).toContain(
        "mediagate: stopped: could not write the console's output (ENOSPC)\n",
      );
      expect(code, stderr).toBe(1);
    } finally {
      await full.close();
    }
  });
});
