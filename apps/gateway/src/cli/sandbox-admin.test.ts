import { randomBytes } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectDocker, Sandbox } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyEnv } from "../config/env.js";
import { loadConfig } from "../config/load.js";
import { sandboxList, sandboxReap, sandboxRemove } from "./sandbox-admin.js";

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
    const p = (await loadConfig({ path: file, env: emptyEnv(dir) })).profiles[0]!;
    sandbox = new Sandbox({
      engine: connectDocker({}),
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
  const opts = () => ({ config: file, env: emptyEnv(dir) });

  it("lists this profile's containers and removes one by slot key", async () => {
    const slot = `profile:${profile}`;
    const { containerId } = await sandbox.acquire(slot);
    const listed = await run((p) => sandboxList(opts(), p));
    expect(listed.lines).toHaveLength(1);
    expect(listed.lines[0]).toMatch(new RegExp(`^${containerId.slice(0, 12)}\\t${profile}\\t`));
    const removed = await run((p) => sandboxRemove(slot, opts(), p));
    expect(removed.code).toBe(0);
    expect(removed.lines[0]).toContain(`removed ${containerId.slice(0, 12)}`);
    expect((await run((p) => sandboxList(opts(), p))).lines).toEqual(["no containers"]);
  });

  it("removes by id prefix, and says so when nothing matches", async () => {
    const { containerId } = await sandbox.acquire("session:x");
    expect((await run((p) => sandboxRemove(containerId.slice(0, 12), opts(), p))).code).toBe(0);
    expect(await sandbox.list()).toEqual([]);
    const none = await run((p) => sandboxRemove("ffffffffffff", opts(), p));
    expect(none).toEqual({ code: 1, lines: ["no container of this gateway matches ffffffffffff"] });
  });

  it("reap leaves running containers alone", async () => {
    await sandbox.acquire("session:reap-check");
    const reaped = await run((p) => sandboxReap(opts(), p));
    expect(reaped).toEqual({ code: 0, lines: [`profile ${profile}: nothing to reap`] });
    expect(await sandbox.list()).toHaveLength(1);
  });
});
