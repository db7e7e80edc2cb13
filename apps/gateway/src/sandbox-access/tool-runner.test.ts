import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectDocker, Sandbox } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost, testEnvironment } from "../../../../test-support/engine.js";
import { readEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import { createToolRunner, ToolFileError } from "./tool-runner.js";

/** Runs against the real Docker engine and the busybox test image. */
describe("createToolRunner (real Docker)", () => {
  const profile = `unit-tools-${randomBytes(4).toString("hex")}`;
  const sessionKey = `agent:${profile}:console:dm:local`;
  const slot = `session:${sessionKey}`;
  let home = "";
  let sandbox: Sandbox;

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), "mg-tools-"));
    const config = resolveConfig(
      {
        home,
        profiles: [
          { name: profile, sandbox: { image: "mediagate-sandbox:test", persistent: false } },
        ],
      },
      { env: readEnv(testEnvironment(home)) },
    );
    const p = config.profiles[0]!;
    sandbox = new Sandbox({
      engine: connectDocker({ host: testDockerHost() }),
      profile,
      profileHome: p.home,
      rootHome: home,
      settings: p.sandbox,
    });
  });

  afterAll(async () => {
    await sandbox.cleanup(slot, { force: true, deleteDirs: true });
    for (const c of await sandbox.list()) await sandbox.remove(c.id);
    await sandbox.shutdown();
    await rm(home, { recursive: true, force: true });
  });

  it("writes and reads back text (quotes, newlines, unicode) relative to the session cwd", async () => {
    const tools = createToolRunner({
      sandbox,
      slot,
      sessionKey,
      signal: new AbortController().signal,
    });
    await tools.run("mkdir -p /workspace/sub && cd /workspace/sub");
    const content = 'it\'s "quoted"\n$HOME `x` ünïcødé ✓\n'.repeat(3);
    await tools.writeFile("deep/dir/note.txt", content);
    expect(await tools.readFile("/workspace/sub/deep/dir/note.txt")).toBe(content);
    expect((await tools.run("cat deep/dir/note.txt | wc -c")).stdout.trim()).toBe(
      String(Buffer.byteLength(content)),
    );
  });

  it("tells onOutput the output's text as it comes, a character split across chunks whole", async () => {
    const tools = createToolRunner({
      sandbox,
      slot,
      sessionKey,
      signal: new AbortController().signal,
    });
    const pieces: string[] = [];
    // The first half of "é" ends one chunk; a line of stderr comes before its second half.
    const result = await tools.run(
      "printf 'h\\303'; sleep 0.2; echo err >&2; sleep 0.2; printf '\\251llo\\n'",
      { onOutput: (text) => pieces.push(text) },
    );
    expect(result.stdout).toBe("héllo\n");
    expect(pieces.length).toBeGreaterThan(1);
    expect(pieces.join("")).not.toContain("\uFFFD");
    expect(pieces.join("").replace("err\n", "")).toBe("héllo\n");
    expect(pieces.join("")).toContain("err\n");
  });

  it("writes content larger than one command chunk", async () => {
    const tools = createToolRunner({
      sandbox,
      slot,
      sessionKey,
      signal: new AbortController().signal,
    });
    const content = "abcdefghij".repeat(20_000);
    await tools.writeFile("/workspace/big.txt", content);
    expect(await tools.readFile("/workspace/big.txt", 1_000_000)).toBe(content);
    expect(await tools.readFile("/workspace/big.txt", 5)).toBe("abcde");
  });

  it("reading a missing file fails with a ToolFileError", async () => {
    const tools = createToolRunner({
      sandbox,
      slot,
      sessionKey,
      signal: new AbortController().signal,
    });
    await expect(tools.readFile("/nope/missing.txt")).rejects.toBeInstanceOf(ToolFileError);
  });
});
