import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import { lookup } from "node:dns";
import { once } from "node:events";
import { chown, mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { connect, createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { rootCertificates } from "node:tls";
import { fileURLToPath } from "node:url";
import { Agent, type Dispatcher, getGlobalDispatcher, setGlobalDispatcher } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse, stringify } from "yaml";
import { testDockerHost } from "../../test-support/engine.js";
import { pollFor, waitUntil } from "../../test-support/wait.js";
import { DockerObserver } from "../e2e/harness/docker-observer.js";
import { TestImage, uniqueProfileName } from "../e2e/harness/gateway-home.js";
import { FakeTelegram } from "../fakes/telegram/index.js";
import { removeStaleBuilds } from "./images.js";

/**
 * docker/compose.yaml's `cluster` profile brought up for real (docs/operations.md, "Running a
 * cluster"), the way the docs tell an operator to: a copy of the clone with mediagate.env,
 * mediagate.cluster.yaml (the shipped example with this test's Bot API and sandbox image) and
 * docker/.env, then `docker-compose --profile cluster up -d --build cluster-proxy`. The engine
 * here cannot pull, so the images the profile pulls are stand-ins made from Debian packages
 * (test/long/fixtures/postgres-standin, caddy-standin; the gateway on
 * scripts/build-node-base-image.sh's base), chosen through the profile's own POSTGRES_IMAGE,
 * CADDY_IMAGE and NODE_IMAGE. The shipped Caddyfile serves MEDIAGATE_WEBHOOK_HOST=localhost,
 * for which Caddy issues the certificate from its own local CA; the Bot API fake trusts that
 * CA and delivers the chat's updates to the published port 443, as Telegram would.
 *
 * It proves: both replicas register in the cluster; updates delivered through the proxy are
 * each answered once and in order; with the replica holding
 * the chat SIGKILLed (`docker kill`), the other answers within issue 29's bound; started
 * again, the killed one rejoins; `docker-compose down -v` leaves no container, volume or network of the
 * project, and the only sandbox containers left are the replicas' persistent ones, removed by
 * the cluster's label as docs/operations.md says.
 */
const RepoRoot = fileURLToPath(new URL("../../", import.meta.url));
const Fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));
const BaseImage = "mediagate-node-base:local";
const PostgresImage = "mediagate-postgres-standin:local";
const CaddyImage = "mediagate-caddy-standin:local";
const ImageUser = { uid: 10001, gid: 2_000_000 };
const ChatUser = 7302;
const WebhookSecret = "compose-cluster_secret";
/** Issue 29: a dead replica's chat is answered again by another within this bound. */
const TakeOverBoundMs = 15_000;
/** Building the gateway image from scratch on this machine: about ten minutes (test/long/README.md). */
const BuildTimeoutMs = 3_600_000;

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

function sh(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<Ran> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd ?? RepoRoot,
        env: options.env ?? process.env,
        timeout: options.timeoutMs ?? BuildTimeoutMs,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") return reject(error);
        resolve({ code: error === null ? 0 : Number(error.code), stdout, stderr });
      },
    );
  });
}

async function must(
  command: string,
  args: readonly string[],
  options: Parameters<typeof sh>[2] = {},
): Promise<string> {
  const ran = await sh(command, args, options);
  if (ran.code !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} exited ${ran.code}:\n${ran.stdout}\n${ran.stderr}`,
    );
  }
  return ran.stdout;
}

/** Builds a stand-in image from its fixture directory unless the tag is there already. */
async function standIn(tag: string, dir: string): Promise<void> {
  if ((await sh("docker", ["image", "inspect", tag])).code === 0) return;
  await must("docker", [
    "build",
    "--build-arg",
    `BASE_IMAGE=${BaseImage}`,
    "-t",
    tag,
    join(Fixtures, dir),
  ]);
}

/** The engine's unix socket: `DOCKER_HOST` when it names one, else the default. */
function socketPath(): string {
  const host = testDockerHost() ?? "";
  return host.startsWith("unix://") ? host.slice("unix://".length) : "/var/run/docker.sock";
}

/**
 * A TCP forwarder on `host` (the engine's bridge gateway, which the containers reach as
 * host.docker.internal) to the Bot API fake, which listens on loopback only.
 */
async function forwardTo(host: string, port: number): Promise<{ port: number; server: Server }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(port, "127.0.0.1");
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => s.destroy());
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  server.on("close", () => {
    for (const s of sockets) s.destroy();
  });
  server.listen(0, host);
  await once(server, "listening");
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("forwarder: no port");
  return { port: address.port, server };
}

interface ReplicaRow {
  id: string;
  host: string;
  sessionsHeld: number;
  alive: boolean;
}

describe("docker/compose.yaml's cluster profile", () => {
  const profile = uniqueProfileName("compose");
  const project = `mgcluster${randomBytes(4).toString("hex")}`;
  // Telegram's retries of a failed delivery grow to minutes; the bound checked here is the
  // cluster's, so the fake retries every second.
  const fake = new FakeTelegram({ webhook: { retryDelayMs: () => 1_000 } });
  const docker = new DockerObserver();
  let work = "";
  let clone = "";
  let forwarder: Server | undefined;
  let dispatcher: Dispatcher | undefined;
  /** The cluster's id, as the replicas' health endpoints report it. */
  let clusterId = "";

  const compose = (args: readonly string[], timeoutMs = BuildTimeoutMs) =>
    sh(
      "docker-compose",
      ["-p", project, "-f", "docker/compose.yaml", "--profile", "cluster", ...args],
      { cwd: clone, timeoutMs },
    );
  const projectLabel = { "com.docker.compose.project": project };
  const serviceContainer = async (service: string): Promise<string> => {
    const [c] = await docker.containers({ ...projectLabel, "com.docker.compose.service": service });
    if (c === undefined) throw new Error(`no container of service ${service}`);
    return c.id;
  };
  const logs = async (): Promise<string> => {
    const ran = await compose(["logs", "--no-color", "--tail", "200"], 120_000);
    return ran.stdout + ran.stderr;
  };
  /** The cluster section of a replica's health endpoint, read inside its container. */
  const replicas = async (service: string): Promise<ReplicaRow[] | undefined> => {
    const ran = await sh("docker", [
      "exec",
      await serviceContainer(service),
      "node",
      "-e",
      "fetch('http://127.0.0.1:9464/health').then((r) => r.text()).then(console.log, () => process.exit(1))",
    ]);
    if (ran.code !== 0) return undefined;
    const body = JSON.parse(ran.stdout) as { cluster?: { id?: string; replicas?: ReplicaRow[] } };
    clusterId = body.cluster?.id ?? clusterId;
    return body.cluster?.replicas;
  };
  /** Waits until `service`'s health endpoint lists `count` live replicas. */
  const waitForAlive = async (service: string, count: number, what: string): Promise<void> => {
    const listed = await pollFor(
      async () => {
        const rows = await replicas(service);
        return rows?.filter((r) => r.alive).length === count ? rows : undefined;
      },
      300_000,
      1_000,
    );
    if (listed === undefined)
      throw new Error(`${what}: ${service} never listed ${count} live replicas`);
  };
  /** A user writes; the fake delivers it to the webhook (the proxy), as Telegram does. */
  const write = (text: string): void => {
    fake.sendPrivateText({ userId: ChatUser, text });
  };
  /** The chat's tokens in the order the bot's replies arrived at the fake. */
  const answered = (): string[] =>
    fake
      .callsTo("sendMessage")
      .map((call) => String(call.params.text ?? ""))
      .flatMap((text) => text.match(/ok-n\d+/g) ?? []);

  beforeAll(async () => {
    await must("bash", ["scripts/build-node-base-image.sh", BaseImage]);
    await standIn(PostgresImage, "postgres-standin");
    await standIn(CaddyImage, "caddy-standin");
    await fake.start();
    const bridge = (
      await must("docker", [
        "network",
        "inspect",
        "bridge",
        "-f",
        "{{(index .IPAM.Config 0).Gateway}}",
      ])
    ).trim();
    const forwarded = await forwardTo(bridge, Number(new URL(fake.apiRoot).port));
    forwarder = forwarded.server;

    work = await mkdtemp(join(tmpdir(), "mg-compose-"));
    // The clone as an operator has it: the tracked files (node_modules and builds stay out).
    clone = join(work, "clone");
    await mkdir(clone);
    await must("sh", ["-c", `git ls-files -z | tar --null -T - -cf - | tar -xf - -C '${clone}'`]);
    const homes = [join(work, "home-1"), join(work, "home-2")];
    for (const home of homes) {
      await mkdir(home, { mode: 0o700 });
      await chown(home, ImageUser.uid, ImageUser.gid);
    }
    const example = parse(
      await readFile(join(clone, "docker/cluster/mediagate.cluster.example.yaml"), "utf8"),
    ) as { profiles: Record<string, unknown>[] };
    const [shipped] = example.profiles;
    const telegram = shipped?.telegram as { webhook: Record<string, unknown> };
    example.profiles = [
      {
        ...shipped,
        name: profile,
        admins: [`telegram:${ChatUser}`],
        telegram: {
          ...telegram,
          apiRoot: `http://host.docker.internal:${forwarded.port}`,
          webhook: { ...telegram.webhook, url: "https://localhost/telegram" },
        },
        sandbox: { ...(shipped?.sandbox as object), image: TestImage },
      },
    ];
    await writeFile(join(clone, "mediagate.cluster.yaml"), stringify(example), { mode: 0o644 });
    await writeFile(
      join(clone, "mediagate.env"),
      `TELEGRAM_BOT_TOKEN=${fake.token}\nTELEGRAM_WEBHOOK_SECRET=${WebhookSecret}\n`,
      { mode: 0o600 },
    );
    await writeFile(
      join(clone, "docker/.env"),
      [
        `DOCKER_GID=${(await stat(socketPath())).gid}`,
        `POSTGRES_PASSWORD=${randomBytes(24).toString("hex")}`,
        "MEDIAGATE_WEBHOOK_HOST=localhost",
        `MEDIAGATE_HOME_1=${homes[0]}`,
        `MEDIAGATE_HOME_2=${homes[1]}`,
        `NODE_IMAGE=${BaseImage}`,
        `POSTGRES_IMAGE=${PostgresImage}`,
        `CADDY_IMAGE=${CaddyImage}`,
        "",
      ].join("\n"),
      { mode: 0o600 },
    );
  }, BuildTimeoutMs);

  afterAll(async () => {
    if (clone !== "") await compose(["down", "-v", "--remove-orphans", "-t", "60"], 600_000);
    // The profile's `mediagate:latest` from an earlier run, left untagged by this one's build.
    const stale = await removeStaleBuilds();
    if (stale.problems.length > 0) console.warn("older gateway builds kept:", stale.problems);
    for (const c of await docker.containers({
      "mediagate.agent": "1",
      "mediagate.profile": profile,
    })) {
      await docker.removeForce(c.id);
    }
    if (dispatcher !== undefined) setGlobalDispatcher(dispatcher);
    await new Promise((resolve) => (forwarder ? forwarder.close(resolve) : resolve(undefined)));
    await fake.stop();
    if (work !== "") await rm(work, { recursive: true, force: true });
  }, 900_000);

  it(
    "serves a webhook chat through the proxy, survives a killed replica and leaves nothing behind when taken down",
    async () => {
      const up = await compose(["up", "-d", "--build", "cluster-proxy"]);
      if (up.code !== 0)
        throw new Error(`compose up exited ${up.code}:\n${up.stdout}\n${up.stderr}`);
      try {
        // Both replicas registered in the one database, each seeing the other alive.
        for (const service of ["gateway-1", "gateway-2"]) {
          await waitForAlive(service, 2, "both replicas registered");
        }
        // Each replica set the webhook to the proxy's public URL at its start.
        await waitUntil(
          () => fake.callsTo("setWebhook").length >= 2,
          "both replicas to call setWebhook",
          120_000,
        );
        expect(fake.callsTo("setWebhook").map((c) => c.params.url)).toEqual([
          "https://localhost/telegram",
          "https://localhost/telegram",
        ]);
        const proxy = await serviceContainer("cluster-proxy");
        const ca =
          (await pollFor(async () => {
            const ran = await sh("docker", [
              "exec",
              proxy,
              "cat",
              "/data/caddy/pki/authorities/local/root.crt",
            ]);
            return ran.code === 0 && ran.stdout.includes("BEGIN CERTIFICATE")
              ? ran.stdout
              : undefined;
          }, 120_000)) ?? "";
        expect(ca, "the proxy's local CA").toContain("BEGIN CERTIFICATE");
        // The fake's webhook delivery (Node's fetch) trusts the proxy's CA and reaches
        // `localhost` on IPv4, where the engine published the proxy's port 443.
        dispatcher = getGlobalDispatcher();
        setGlobalDispatcher(
          new Agent({
            connect: {
              ca: [...rootCertificates, ca],
              lookup: (host, options, callback) =>
                lookup(host, { ...options, family: 4 }, callback),
            },
          }),
        );

        const before = ["ok-n01", "ok-n02", "ok-n03", "ok-n04"];
        for (const token of before) write(`echo ${token}`);
        await waitUntil(() => answered().length >= before.length, "the first answers", 300_000);
        // Each answered once and in order, though both replicas take them (docs/cluster.md,
        // "Each session's messages in order").
        expect(answered()).toEqual(before);

        // SIGKILL the replica that holds the chat's session.
        const rows = (await replicas("gateway-1")) ?? [];
        const holder = rows.find((r) => r.sessionsHeld > 0) ?? rows[0];
        let victim = "gateway-1";
        for (const service of ["gateway-1", "gateway-2"]) {
          if (holder !== undefined && (await serviceContainer(service)).startsWith(holder.host)) {
            victim = service;
          }
        }
        const survivor = victim === "gateway-1" ? "gateway-2" : "gateway-1";
        await must("docker", ["kill", await serviceContainer(victim)]);
        const killedAt = Date.now();

        const after = ["ok-n05", "ok-n06", "ok-n07"];
        for (const token of after) write(`echo ${token}`);
        const first = await pollFor(
          () => (answered().length > before.length ? Date.now() : undefined),
          120_000,
        );
        expect(first, "an answer after the kill").toBeDefined();
        console.log(
          `[compose-cluster] ${victim} killed; first answer after it in ${(first ?? 0) - killedAt} ms`,
        );
        expect((first ?? Number.POSITIVE_INFINITY) - killedAt).toBeLessThanOrEqual(TakeOverBoundMs);
        await waitUntil(
          () => answered().length >= before.length + after.length,
          "the answers after the kill",
          120_000,
        );
        // Once each and in order: a message the survivor handed to the dead holder just before
        // the kill runs, once taken over, before the later ones.
        expect(answered().slice(before.length)).toEqual(after);
        // With the session on the one replica left, a burst is answered in order.
        const last = ["ok-n08", "ok-n09", "ok-n10"];
        for (const token of last) write(`echo ${token}`);
        const answeredBefore = before.length + after.length;
        await waitUntil(
          () => answered().length >= answeredBefore + last.length,
          "the answers on one replica",
          120_000,
        );
        expect(answered().slice(answeredBefore)).toEqual(last);
        await waitForAlive(survivor, 1, "the killed replica counted dead");

        // The killed replica starts again and cleans up what it left (docs/cluster.md).
        const started = await compose(["start", victim], 300_000);
        expect(started.code, started.stderr).toBe(0);
        await waitForAlive(victim, 2, "the killed replica rejoined");
      } catch (error) {
        const calls = fake.calls.map(
          (c) => `${c.method} ${JSON.stringify(c.params).slice(0, 200)}`,
        );
        throw new Error(
          `${String(error)}\nwebhook attempts: ${JSON.stringify(fake.webhook.attempts)}\nBot API calls:\n${calls.join("\n")}\ncompose logs:\n${await logs()}`,
        );
      }

      const down = await compose(["down", "-v", "-t", "60"], 600_000);
      expect(down.code, down.stderr).toBe(0);
      const composeLeft = async (kind: "volume" | "network") =>
        (
          await must("docker", [
            kind,
            "ls",
            "-q",
            "--filter",
            `label=com.docker.compose.project=${project}`,
          ])
        ).trim();
      expect({
        containers: await docker.containers(projectLabel),
        volumes: await composeLeft("volume"),
        networks: await composeLeft("network"),
      }).toEqual({ containers: [], volumes: "", networks: "" });
      // Compose does not know the sandbox containers the replicas made: the persistent ones
      // keep running between gateway processes (docs/sandbox.md) and stay for the next `up`.
      const sandboxes = await docker.containers({
        "mediagate.agent": "1",
        "mediagate.profile": profile,
      });
      expect(
        sandboxes.map((c) => [c.labels["mediagate.persistent"], c.labels["mediagate.cluster"]]),
      ).toEqual(sandboxes.map(() => ["1", clusterId]));
      // Removed as docs/operations.md tells an operator to, by the cluster's label.
      const ids = (
        await must("docker", ["ps", "-aq", "--filter", `label=mediagate.cluster=${clusterId}`])
      )
        .split("\n")
        .filter((id) => id !== "");
      // With their volumes: each sandbox has an anonymous scratch volume (container-spec.ts).
      if (ids.length > 0) await must("docker", ["rm", "-f", "-v", ...ids]);
      expect(
        await docker.containers({ "mediagate.agent": "1", "mediagate.profile": profile }),
      ).toEqual([]);
      expect(
        (
          await must("docker", [
            "volume",
            "ls",
            "-q",
            "--filter",
            `label=mediagate.profile=${profile}`,
          ])
        ).trim(),
      ).toBe("");
    },
    BuildTimeoutMs,
  );
});
