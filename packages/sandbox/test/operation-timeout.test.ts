import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { waitUntil } from "../../../test-support/wait.js";
import { connectDocker, Sandbox, SandboxError, type SandboxSettings } from "../src/index.js";
import { TestImage, testSettings, uniqueProfile } from "./helpers.js";
import { classify } from "./inbox-helpers.js";
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
  bounds: { operationTimeoutMs: number; provisionTimeoutMs?: number } = {
    operationTimeoutMs: BoundMs,
  },
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
    ...bounds,
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
    await waitUntil(() => creates.every((r) => r.cutOff), "both create requests cancelled");
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

/** Longer than a test may run: only the abort can end these waits. */
const NoBound = { operationTimeoutMs: 600_000, provisionTimeoutMs: 600_000 };

describe("an abort while the slot's container is being made", () => {
  it("stops run() waiting for a create and removes what the create may still make", async () => {
    const { sandbox, daemon } = await wedgedSandbox(
      ["POST /containers/create"],
      { persistAcrossProcesses: false },
      NoBound,
    );
    const stop = new AbortController();
    const pending = failure(sandbox.run("session:a", "s", "echo hi", { signal: stop.signal }));
    await waitUntil(
      () => daemon.requests.some((r) => r.path === "/containers/create"),
      "the create sent",
    );
    stop.abort();
    expect(await pending).toMatchObject({ name: "AbortError" });
    const create = daemon.requests.find((r) => r.path === "/containers/create");
    await waitUntil(() => create?.cutOff === true, "the create request cancelled");
    await sandbox.shutdown(5_000);
    const name = create?.query.get("name");
    expect(name).toMatch(/^mediagate-/);
    const removals = daemon.requests.filter(
      (r) => r.method === "DELETE" && r.path === `/containers/${name}`,
    );
    expect(removals).toHaveLength(1);
  });

  it("stops exec() waiting for the slot while another call makes its container", async () => {
    const { sandbox, daemon } = await wedgedSandbox(["POST /containers/create"], {}, NoBound);
    const first = new AbortController();
    const making = failure(sandbox.acquire("default", first.signal));
    await waitUntil(
      () => daemon.requests.some((r) => r.path === "/containers/create"),
      "the first create sent",
    );
    const second = new AbortController();
    const waiting = failure(sandbox.exec("default", "true", { signal: second.signal }));
    second.abort();
    expect(await waiting).toMatchObject({ name: "AbortError" });
    // The other call's provisioning goes on: one abort stops its own caller only.
    const creates = daemon.requests.filter((r) => r.path === "/containers/create");
    expect(creates.map((r) => r.cutOff)).toEqual([false]);
    first.abort();
    expect(await making).toMatchObject({ name: "AbortError" });
    await sandbox.shutdown(5_000);
  });

  it("stops saveToInbox() waiting for the image look-up and destroys the files' sources", async () => {
    const lookUp = `GET /images/${TestImage}/json`;
    const { sandbox, daemon } = await wedgedSandbox([lookUp], {}, NoBound);
    const source = Readable.from([Buffer.from("never read")]);
    const stop = new AbortController();
    const saving = failure(
      sandbox.saveToInbox("default", [{ name: "a.txt", source, maxBytes: 1024 }], {
        sessionKey: "s",
        classify,
        signal: stop.signal,
      }),
    );
    await waitUntil(
      () => daemon.requests.some((r) => `${r.method} ${r.path}` === lookUp),
      "the image looked up",
    );
    stop.abort();
    expect(await saving).toMatchObject({ name: "AbortError" });
    expect(source.destroyed).toBe(true);
    expect(daemon.requests.some((r) => r.path === "/containers/create")).toBe(false);
    await sandbox.shutdown(5_000);
  });
});
