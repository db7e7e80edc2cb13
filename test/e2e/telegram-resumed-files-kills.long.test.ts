import { existsSync } from "node:fs";
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { waitUntil } from "../../test-support/wait.js";
import type { RecordedCall } from "../fakes/telegram/index.js";
import type { CliInstall } from "./harness/cli-install.js";
import { CliTelegram } from "./harness/cli-telegram.js";
import { DockerObserver } from "./harness/docker-observer.js";
import { installOf } from "./harness/telegram-gateway.js";

const Admin = 91;
const docker = new DockerObserver();

const telegram = CliTelegram.perTest();

/** The install's per-session containers, in any state. */
async function sessionContainers(home: string): Promise<string[]> {
  const found = await docker.containers({
    "mediagate.install": installOf(home),
    "mediagate.persistent": "0",
  });
  return found.map((c) => c.id);
}

/**
 * The per-session slot directories of the profile (a warm container's binds name the pool's
 * directory it was made for, renamed to the session's when claimed: found by name, not mounts).
 */
async function sessionDirs(install: CliInstall): Promise<string[]> {
  const root = join(install.home, "profiles", install.profile, "sandboxes", "docker");
  const names = await readdir(root).catch(() => []);
  return names
    .filter((name) => name.startsWith("session_") && !name.includes("warm-pool"))
    .map((name) => join(root, name));
}

const documents = (calls: readonly RecordedCall[], ok: boolean) =>
  calls.filter((c) => c.method === "sendDocument" && c.ok === ok);

/**
 * A reply a SIGKILLed process left pending, its file in a per-session slot directory and its
 * next attempt put off by the platform (a 429 whose retry_after is longer than a delivery waits
 * inline, so the outbox schedules it): the restarted gateway reaps the dead process's
 * container while the reply waits, keeps the slot's directory for it (docs/durability.md),
 * sends the file at its time and deletes the directory after.
 */
describe("a resumed reply put off past the orphan reap, per-session sandbox", () => {
  it("sends its file at its retry time, then deletes the dead process's directory", async () => {
    const install = await telegram.install("tg-kept-dir", {
      admins: [`telegram:${Admin}`],
      sandbox: { persistent: false },
    });
    const first = await install.start();
    telegram.fake.failNext("sendDocument", { kind: "rate_limit", retryAfterSeconds: 61 });
    telegram.fake.sendPrivateText({
      userId: Admin,
      text: "printf kept-bytes > /workspace/kept.txt && echo MEDIA:/workspace/kept.txt",
    });
    await waitUntil(
      () => first.stderr().includes('"msg":"reply rescheduled"'),
      "the reply rescheduled by its retry_after",
    );
    const dead = await sessionContainers(install.home);
    expect(dead.length).toBeGreaterThan(0);
    const [slotDir, ...others] = await sessionDirs(install);
    expect(others).toEqual([]);
    const file = join(slotDir!, "workspace", "kept.txt");
    expect(existsSync(file)).toBe(true);

    await install.kill();
    await install.start();
    // The reap of the new process does not wait for the reply's time: the dead container goes.
    await waitUntil(
      async () => !(await sessionContainers(install.home)).some((id) => dead.includes(id)),
      "the dead process's containers reaped",
    );
    expect(existsSync(file)).toBe(true);
    expect(documents(telegram.fake.calls, true)).toEqual([]);

    await waitUntil(
      () => documents(telegram.fake.calls, true).length > 0,
      "the file at its retry time",
      120_000,
    );
    const [sent] = documents(telegram.fake.calls, true);
    expect(sent!.files.map((f) => f.bytes.toString())).toEqual(["kept-bytes"]);
    expect(
      telegram.fake.calls.filter(
        (c) => c.method === "sendMessage" && String(c.params.text).includes("Couldn't deliver"),
      ),
    ).toEqual([]);
    await waitUntil(() => !existsSync(slotDir!), "the directory deleted once it was sent");
  });
});
