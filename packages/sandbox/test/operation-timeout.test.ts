import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { connectDocker, Sandbox, SandboxError, type SandboxSettings } from "../src/index.js";
import { testSettings, uniqueProfile } from "./helpers.js";
import { startWedgedDaemon, type WedgedDaemon } from "./wedged-daemon.js";

const BoundMs = 300;

let daemon: WedgedDaemon | undefined;
let home: string | undefined;

afterEach(async () => {
  await daemon?.close();
  daemon = undefined;
  if (home !== undefined) await rm(home, { recursive: true, force: true });
  home = undefined;
});

/** A sandbox talking to a fake daemon that never answers the routes in `hang`. */
async function wedgedSandbox(
  hang: readonly string[],
  settings: Partial<SandboxSettings> = {},
): Promise<{ sandbox: Sandbox; daemon: WedgedDaemon }> {
  daemon = await startWedgedDaemon(hang);
  home = await mkdtemp(join(tmpdir(), "mg-wedged-"));
  const profile = uniqueProfile();
  const sandbox = new Sandbox({
    engine: connectDocker({ host: daemon.host }),
    profile,
    profileHome: join(home, "profiles", profile),
    rootHome: home,
    settings: testSettings(settings),
    operationTimeoutMs: BoundMs,
  });
  return { sandbox, daemon };
}

function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => new Error("expected a failure"),
    (error: unknown) => error,
  );
}

describe("lifecycle calls the daemon never answers", () => {
  it("fail the acquire with a SandboxError and free the slot for the next acquire", async () => {
    const { sandbox, daemon } = await wedgedSandbox(["POST /containers/create"]);
    const first = failure(sandbox.acquire("default"));
    const second = failure(sandbox.acquire("default"));
    for (const error of [await first, await second]) {
      expect(error).toBeInstanceOf(SandboxError);
      expect(error).toMatchObject({ operation: "acquire", slot: "default" });
      expect(String(error)).toMatch(/create container got no answer within 300 ms/);
    }
    const creates = daemon.requests.filter((r) => r.path === "/containers/create");
    expect(creates).toHaveLength(2);
    // The requests were cancelled, not merely given up on by the caller.
    await expect.poll(() => creates.every((r) => r.cutOff)).toBe(true);
    await expect(sandbox.cleanup("default", { force: true })).resolves.toBeUndefined();
    await expect(sandbox.shutdown(5_000)).resolves.toBeUndefined();
  });

  it("remove a uniquely named container a cut-off create may still make", async () => {
    const { sandbox, daemon } = await wedgedSandbox(["POST /containers/create"], {
      persistAcrossProcesses: false,
    });
    expect(await failure(sandbox.acquire("session:a"))).toBeInstanceOf(SandboxError);
    await sandbox.shutdown(5_000);
    const name = daemon.requests.find((r) => r.path === "/containers/create")?.query.get("name");
    expect(name).toMatch(/^mediagate-/);
    const removals = daemon.requests.filter(
      (r) => r.method === "DELETE" && r.path === `/containers/${name}`,
    );
    expect(removals).toHaveLength(1);
  });

  it("fail cleanup and status with a SandboxError without queueing the slot forever", async () => {
    const { sandbox } = await wedgedSandbox(["GET /containers/json"], {
      persistent: false,
      orphanReaper: false,
    });
    const cleanups = [failure(sandbox.cleanup("session:b")), failure(sandbox.cleanup("session:b"))];
    for (const error of await Promise.all(cleanups)) {
      expect(error).toBeInstanceOf(SandboxError);
      expect(error).toMatchObject({ operation: "cleanup", slot: "session:b" });
      expect(String(error)).toMatch(/list containers got no answer within 300 ms/);
    }
    expect(await failure(sandbox.acquire("session:b"))).toMatchObject({
      name: "SandboxError",
      operation: "acquire",
    });
    expect(await failure(sandbox.status("session:b"))).toMatchObject({ operation: "status" });
    await expect(sandbox.shutdown(5_000)).resolves.toBeUndefined();
  });
});
