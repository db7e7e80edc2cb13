import { access, mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectDocker, Defaults, Sandbox, type SandboxSettings } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../test-support/engine.js";
import { DockerObserver } from "../e2e/harness/docker-observer.js";
import { uniqueProfileName } from "../e2e/harness/gateway-home.js";

/**
 * What the sandbox needs from an image (docs/sandbox-images.md), checked against one image:
 * `MEDIAGATE_CONTRACT_IMAGE` (default the busybox test image). Point it at your own image to
 * see whether the gateway can run in it:
 *
 *   MEDIAGATE_CONTRACT_IMAGE=mediagate-sandbox:debian \
 *   MEDIAGATE_CONTRACT_TOOLS="python3 git curl" \
 *   npx vitest run --config vitest.long.config.ts long/sandbox-image-contract.long.test.ts
 *
 * `MEDIAGATE_CONTRACT_TOOLS` names extra commands the image promises; with `git` among them
 * a session (an unprivileged uid) also commits in /workspace.
 */
const Image = process.env.MEDIAGATE_CONTRACT_IMAGE || "mediagate-sandbox:test";
const Tools = (process.env.MEDIAGATE_CONTRACT_TOOLS ?? "").split(/\s+/).filter(Boolean);

describe(`the sandbox contract of ${Image}`, () => {
  const observer = new DockerObserver();
  const profile = uniqueProfileName("contract");
  let home = "";
  const sandboxes: Sandbox[] = [];

  function sandbox(overrides: Partial<SandboxSettings> = {}): Sandbox {
    const made = new Sandbox({
      engine: connectDocker({ host: testDockerHost() }),
      profile,
      profileHome: home,
      rootHome: home,
      settings: {
        ...Defaults.settings,
        image: Image,
        persistent: false,
        diskLimitBytes: 0,
        orphanReaper: false,
        ...overrides,
      },
    });
    sandboxes.push(made);
    return made;
  }

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), "mg-contract-"));
  });
  afterAll(async () => {
    for (const s of sandboxes) await s.shutdown();
    for (const c of await observer.profileContainers(profile)) await observer.removeForce(c.id);
    if (home !== "") await rm(home, { recursive: true, force: true });
  });

  it("runs one-shot commands as the one-shot uid, in /workspace", async () => {
    const box = sandbox();
    const result = await box.exec("default", 'echo "$(id -u):$(id -g) $PWD"');
    expect(result).toMatchObject({ exitCode: 0, stderr: "" });
    expect(result.stdout).toBe(`${Defaults.sessionUidBase}:${Defaults.sandboxGid} /workspace\n`);
    await box.cleanup("default", { force: true });
  });

  it("keeps each session's cwd and exports in its own shell, under its own uid", async () => {
    const box = sandbox();
    await box.run(
      "default",
      "session-a",
      "mkdir -p /workspace/a && cd /workspace/a && export MG_X=1",
    );
    const probe = 'echo "$PWD" "$' + '{MG_X:-unset}" "$(id -u)"';
    const a = await box.run("default", "session-a", probe);
    const b = await box.run("default", "session-b", probe);
    const [aPwd, aX, aUid] = a.stdout.trim().split(" ");
    const [bPwd, bX, bUid] = b.stdout.trim().split(" ");
    expect([aPwd, aX, bPwd, bX]).toEqual(["/workspace/a", "1", "/workspace", "unset"]);
    expect(Number(aUid)).toBeGreaterThan(Defaults.sessionUidBase);
    expect(Number(bUid)).toBeGreaterThan(Defaults.sessionUidBase);
    expect(aUid).not.toBe(bUid);
    await box.cleanup("default", { force: true });
  });

  it("kills what a session left running in the background", async () => {
    const box = sandbox();
    await box.run("default", "session-k", "sleep 300 >/dev/null 2>&1 &");
    expect(await box.killSession("session-k")).toBeGreaterThanOrEqual(1);
    const left = await box.exec(
      "default",
      "cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$' || true",
    );
    expect(left.stdout.trim()).toBe("1"); // the container's own `sleep infinity`
    await box.cleanup("default", { force: true });
  });

  it("puts a session's files on the host (bind) and deletes the slot with the image's rm", async () => {
    const box = sandbox();
    await box.run("default", "session-f", "echo made-here > /workspace/out.txt");
    const dir = box.slotDirectory("default");
    expect(await readFile(join(dir, "workspace", "out.txt"), "utf8")).toBe("made-here\n");
    await box.cleanup("default", { force: true, deleteDirs: true });
    await expect(access(dir)).rejects.toThrow();
  });

  it("reads a file out of the live container (tmpfs filesystem)", async () => {
    const box = sandbox({ filesystem: "tmpfs" });
    await box.run("default", "session-r", "printf 'in-memory' > /workspace/mem.txt");
    const file = await box.readFile("default", "/workspace/mem.txt", 1024, {
      sessionKey: "session-r",
    });
    expect(file !== undefined && "size" in file ? file.size : undefined).toBe(9);
    await box.cleanup("default", { force: true });
  });

  if (Tools.length > 0) {
    it(`has ${Tools.join(", ")} for a session`, async () => {
      const box = sandbox();
      for (const tool of Tools) {
        const found = await box.run("default", "session-t", `command -v ${tool}`);
        expect(found.exitCode, `${tool}: ${found.stderr}`).toBe(0);
      }
      if (Tools.includes("git")) {
        const commit = await box.run(
          "default",
          "session-t",
          "cd /workspace && git init -q repo && cd repo && echo x > f && git add f && git commit -qm first && git log --format=%s",
        );
        expect(commit, commit.stderr).toMatchObject({ exitCode: 0, stdout: "first\n" });
      }
      if (Tools.includes("python3")) {
        const py = await box.run("default", "session-t", "python3 -c 'print(6 * 7)'");
        expect(py.stdout).toBe("42\n");
      }
      await box.cleanup("default", { force: true });
    });
  }
});
