import { execFile } from "node:child_process";
import { chown, mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testDockerHost } from "../../test-support/engine.js";
import { DockerObserver } from "../e2e/harness/docker-observer.js";
import { TestImage, uniqueProfileName, waitUntil } from "../e2e/harness/gateway-home.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { GatewayBuildLabels, removeStaleBuilds, untaggedImages } from "./images.js";

/**
 * The gateway image (docs/operations.md, "In a container"): docker/gateway/Dockerfile builds on
 * this machine, whose engine cannot pull, from a base made of Debian packages and the host's
 * node (scripts/build-node-base-image.sh); the image reports its version; and, run the way
 * docker/compose.yaml runs it (engine socket, home at its host path, unprivileged user in the
 * sandbox group), it serves a Telegram chat: a command runs in a sandbox container it made
 * through the socket, and the file the command wrote comes back as a document.
 */
const RepoRoot = fileURLToPath(new URL("../../", import.meta.url));
const BaseImage = "mediagate-node-base:local";
const GatewayImage = "mediagate-gateway:long-test";
const ImageUser = { uid: 10001, gid: 2_000_000 };
const ChatUser = 7301;

function sh(
  command: string,
  args: readonly string[],
  timeoutMs = 1_800_000,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      { cwd: RepoRoot, timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") return reject(error);
        resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
      },
    );
  });
}

async function must(command: string, args: readonly string[]): Promise<string> {
  const ran = await sh(command, args);
  if (ran.code !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`,
    );
  }
  return ran.stdout;
}

/** The engine's unix socket: `DOCKER_HOST` when it names one, else the default. */
function socketPath(): string {
  const host = testDockerHost() ?? "";
  return host.startsWith("unix://") ? host.slice("unix://".length) : "/var/run/docker.sock";
}

async function gatewayVersion(): Promise<string> {
  const pkg = JSON.parse(await readFile(join(RepoRoot, "apps/gateway/package.json"), "utf8")) as {
    version: string;
  };
  return pkg.version;
}

describe("the gateway image", () => {
  const profile = uniqueProfileName("image");
  const name = `mediagate-image-test-${profile}`;
  let work = "";
  let fake: FakeTelegram | undefined;

  beforeAll(async () => {
    await must("bash", ["scripts/build-node-base-image.sh", BaseImage]);
    await must("docker", [
      "build",
      "--build-arg",
      `NODE_IMAGE=${BaseImage}`,
      "-f",
      "docker/gateway/Dockerfile",
      "-t",
      GatewayImage,
      ".",
    ]);
    work = await mkdtemp(join(tmpdir(), "mediagate-image-"));
  }, 3_600_000);

  afterAll(async () => {
    await sh("docker", ["rm", "-f", "-v", name]);
    const docker = new DockerObserver();
    for (const c of await docker.containers({
      "mediagate.agent": "1",
      "mediagate.profile": profile,
    })) {
      await docker.removeForce(c.id);
    }
    await fake?.stop();
    if (work !== "") await rm(work, { recursive: true, force: true });
  });

  it("leaves no older build of the image on the engine, only the newest build stage as cache", async () => {
    const outcome = await removeStaleBuilds();
    expect(outcome.problems).toEqual([]);
    expect(await untaggedImages(GatewayBuildLabels.image)).toEqual([]);
    const stages = await untaggedImages(GatewayBuildLabels.stage);
    expect(stages).toEqual(outcome.kept === undefined ? [] : [outcome.kept]);
  });

  it("prints the gateway package's version", async () => {
    const out = await must("docker", ["run", "--rm", GatewayImage, "--version"]);
    expect(out).toBe(`${await gatewayVersion()}\n`);
  });

  it("serves a chat as its unprivileged user, running the command in a sandbox it made through the socket", async () => {
    fake = new FakeTelegram();
    await fake.start();
    const home = join(work, "home");
    await mkdir(home, { mode: 0o700 });
    await chown(home, ImageUser.uid, ImageUser.gid);
    const config = join(work, "mediagate.yaml");
    await writeFile(
      config,
      [
        "profiles:",
        `  - name: ${profile}`,
        `    telegram: { token: "${fake.token}", apiRoot: "${fake.apiRoot}", pollTimeoutSeconds: 1 }`,
        `    allowedUsers: ["telegram:${ChatUser}"]`,
        `    sandbox: { image: ${TestImage}, diskLimitBytes: 0 }`,
        "",
      ].join("\n"),
      { mode: 0o644 },
    );
    const socket = socketPath();
    const socketGid = (await stat(socket)).gid;
    // docker/compose.yaml's service, as one `docker run` (host network: the fake is on loopback).
    await must("docker", [
      "run",
      "-d",
      "--name",
      name,
      "--init",
      "--network",
      "host",
      "--group-add",
      String(socketGid),
      "-v",
      `${socket}:/var/run/docker.sock`,
      "-v",
      `${home}:${home}`,
      "-v",
      `${config}:/etc/mediagate/mediagate.yaml:ro`,
      "-e",
      "MEDIAGATE_CONFIG=/etc/mediagate/mediagate.yaml",
      "-e",
      `MEDIAGATE_HOME=${home}`,
      GatewayImage,
    ]);
    const logs = async () => {
      const ran = await sh("docker", ["logs", name]);
      return ran.stdout + ran.stderr;
    };
    const running = fake;
    try {
      await waitUntil(
        () => running.callsTo("getUpdates").length > 0,
        "the gateway to poll",
        120_000,
      );
      running.sendPrivateText({
        userId: ChatUser,
        text: "id -u > /workspace/made.txt && echo MEDIA:/workspace/made.txt",
      });
      await waitUntil(
        () => running.callsTo("sendDocument").some((call) => call.files.length > 0),
        "the document to arrive",
        120_000,
      );
    } catch (error) {
      throw new Error(`${String(error)}\ngateway log:\n${await logs()}`);
    }
    const sent = running.callsTo("sendDocument").find((call) => call.files.length > 0);
    const uid = Number(sent?.files[0]?.bytes.toString().trim());
    // A session's own uid wrote it (docs/security.md), in the slot directory the gateway made.
    expect(uid).toBeGreaterThan(2_000_000);
    const slots = join(home, "profiles", profile, "sandboxes/docker");
    const [slot] = await readdir(slots);
    const workspace = await stat(join(slots, slot ?? "none", "workspace"));
    expect({ uid: workspace.uid, gid: workspace.gid }).toEqual(ImageUser);

    // `docker stop` (SIGTERM): the gateway drains and exits 0.
    await must("docker", ["stop", "-t", "60", name]);
    const exit = await must("docker", ["inspect", "-f", "{{.State.ExitCode}}", name]);
    expect(exit.trim(), await logs()).toBe("0");
  });
});
