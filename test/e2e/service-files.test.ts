import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig, readEnv } from "@mediagate/gateway";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createTempHome } from "./harness/gateway-home.js";

/**
 * The service files an operator installs (docs/operations.md, "Running as a service"),
 * checked by the tools that read them: the compose file by `docker compose config` (or Debian's
 * docker-compose; scripts/test.sh installs it), the systemd unit by `systemd-analyze verify`.
 * Building and running the image is the long suite's (test/long/gateway-image.long.test.ts).
 */
const RepoRoot = fileURLToPath(new URL("../../", import.meta.url));

interface Ran {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

function run(command: string, args: readonly string[], env: Record<string, string>): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(command, args, { env }, (error, stdout, stderr) => {
      const code = error === null ? 0 : typeof error.code === "number" ? error.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

function works(command: string, args: readonly string[]): boolean {
  try {
    execFileSync(command, args, { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? "")
    .split(":")
    .some((dir) => dir !== "" && existsSync(join(dir, command)));
}

/** `docker compose …` when the plugin is there, else Debian's `docker-compose …`. */
function composeCommand(): [string, string[]] {
  if (works("docker", ["compose", "version"])) return ["docker", ["compose"]];
  if (onPath("docker-compose")) return ["docker-compose", []];
  throw new Error(
    "no compose tool: install the compose plugin or `apt-get install docker-compose` (scripts/test.sh does)",
  );
}

describe("docker/compose.yaml", () => {
  let clone = "";
  let composeFile = "";
  let compose: [string, string[]] = ["", []];

  beforeAll(async () => {
    // The files the operator makes next to the clone's compose file (its header says how).
    compose = composeCommand();
    clone = await createTempHome("compose");
    await mkdir(join(clone, "docker"));
    composeFile = join(clone, "docker/compose.yaml");
    await copyFile(join(RepoRoot, "docker/compose.yaml"), composeFile);
    await mkdir(join(clone, "docker/cluster"));
    await copyFile(
      join(RepoRoot, "docker/cluster/Caddyfile"),
      join(clone, "docker/cluster/Caddyfile"),
    );
    await writeFile(join(clone, "mediagate.yaml"), "profiles: [{ name: default }]\n");
    await writeFile(join(clone, "mediagate.env"), "TELEGRAM_BOT_TOKEN=1:x\n");
  });

  afterAll(async () => {
    await rm(clone, { recursive: true, force: true });
  });

  const config = (env: Record<string, string>, profile?: string) => {
    const [command, prefix] = compose;
    const profiles = profile === undefined ? [] : ["--profile", profile];
    return run(command, [...prefix, "-f", composeFile, ...profiles, "config"], {
      PATH: process.env.PATH ?? "/usr/bin:/bin",
      HOME: clone,
      ...env,
    });
  };

  it("validates, mounting the engine socket and the home at its host path", async () => {
    const ran = await config({ DOCKER_GID: "4242" });
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    const gateway = (parse(ran.stdout) as { services: { gateway: Record<string, unknown> } })
      .services.gateway;
    expect(gateway.build).toMatchObject({
      context: clone,
      dockerfile: "docker/gateway/Dockerfile",
      args: { NODE_IMAGE: "node:20-bookworm-slim" },
    });
    expect(gateway.volumes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ source: "/var/run/docker.sock", target: "/var/run/docker.sock" }),
        expect.objectContaining({ source: "/var/lib/mediagate", target: "/var/lib/mediagate" }),
        expect.objectContaining({
          source: join(clone, "mediagate.yaml"),
          target: "/etc/mediagate/mediagate.yaml",
          read_only: true,
        }),
      ]),
    );
    expect(gateway.group_add).toEqual(["4242"]);
    expect(gateway.environment).toMatchObject({
      MEDIAGATE_CONFIG: "/etc/mediagate/mediagate.yaml",
      MEDIAGATE_HOME: "/var/lib/mediagate",
      TELEGRAM_BOT_TOKEN: "1:x",
    });
    // Longer than the drain (drainTimeoutSeconds, 15 s by default) plus the clean-up.
    expect(gateway.stop_grace_period).toBe("60s");
    expect(gateway.restart).toBe("unless-stopped");
  });

  it("keeps the home's host and container paths equal when MEDIAGATE_HOME moves it", async () => {
    const ran = await config({ DOCKER_GID: "4242", MEDIAGATE_HOME: "/srv/mediagate" });
    expect(ran.code).toBe(0);
    const gateway = (parse(ran.stdout) as { services: { gateway: Record<string, unknown> } })
      .services.gateway;
    expect(gateway.volumes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ source: "/srv/mediagate", target: "/srv/mediagate" }),
      ]),
    );
    expect(gateway.environment).toMatchObject({ MEDIAGATE_HOME: "/srv/mediagate" });
  });

  it("adds a cluster profile: PostgreSQL, two replicas with homes of their own, a proxy", async () => {
    const ran = await config(
      { DOCKER_GID: "4242", POSTGRES_PASSWORD: "pw", MEDIAGATE_WEBHOOK_HOST: "bot.example.com" },
      "cluster",
    );
    expect(ran.stderr).toBe("");
    expect(ran.code).toBe(0);
    const services = (parse(ran.stdout) as { services: Record<string, Record<string, unknown>> })
      .services;
    expect(services.postgres).toMatchObject({
      profiles: ["cluster"],
      environment: { POSTGRES_PASSWORD: "pw", POSTGRES_DB: "mediagate" },
    });
    const homes: string[] = [];
    for (const [name, home] of [
      ["gateway-1", "/var/lib/mediagate-1"],
      ["gateway-2", "/var/lib/mediagate-2"],
    ] as const) {
      const replica = services[name];
      expect(replica).toMatchObject({
        image: "mediagate:latest",
        profiles: ["cluster"],
        group_add: ["4242"],
        stop_grace_period: "60s",
        depends_on: { postgres: { condition: "service_healthy" } },
        environment: {
          MEDIAGATE_HOME: home,
          DATABASE_URL: "postgres://mediagate:pw@postgres:5432/mediagate",
          TELEGRAM_BOT_TOKEN: "1:x",
        },
      });
      expect(replica?.volumes).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ source: "/var/run/docker.sock" }),
          expect.objectContaining({ source: home, target: home }),
          expect.objectContaining({ source: join(clone, "mediagate.cluster.yaml") }),
        ]),
      );
      homes.push(home);
    }
    expect(new Set(homes).size).toBe(2);
    const proxy = services["cluster-proxy"];
    expect(proxy).toMatchObject({
      profiles: ["cluster"],
      environment: { MEDIAGATE_WEBHOOK_HOST: "bot.example.com" },
    });
    expect(proxy?.volumes).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          source: join(clone, "docker/cluster/Caddyfile"),
          target: "/etc/caddy/Caddyfile",
        }),
      ]),
    );
    const caddyfile = await readFile(join(RepoRoot, "docker/cluster/Caddyfile"), "utf8");
    expect(caddyfile).toMatch(/reverse_proxy gateway-1:8443 gateway-2:8443 \{/);
    expect(caddyfile).toContain("lb_policy round_robin");
  });

  it("leaves the single gateway as it was when the cluster's variables are unset", async () => {
    const ran = await config({ DOCKER_GID: "4242" });
    expect(ran.stderr).toBe("");
    const services = (parse(ran.stdout) as { services: Record<string, Record<string, unknown>> })
      .services;
    expect(services.gateway?.profiles).toBeUndefined();
    expect(services.gateway?.depends_on).toBeUndefined();
  });

  it("ships a cluster config the gateway loads: PostgreSQL store, webhook on 8443", async () => {
    const loaded = await loadConfig({
      path: join(RepoRoot, "docker/cluster/mediagate.cluster.example.yaml"),
      env: readEnv({
        HOME: clone,
        DATABASE_URL: "postgres://mediagate:pw@postgres:5432/mediagate",
        TELEGRAM_BOT_TOKEN: "1:x",
        TELEGRAM_WEBHOOK_SECRET: "s3cret",
      }),
    });
    expect(loaded.store).toMatchObject({ kind: "postgres" });
    expect(loaded.profiles[0]?.telegram?.webhook).toMatchObject({ listen: "0.0.0.0:8443" });
  });

  it("refuses to start without DOCKER_GID, saying how to find it", async () => {
    const ran = await config({});
    expect(ran.code).not.toBe(0);
    expect(ran.stderr).toContain("stat -c %g /var/run/docker.sock");
  });
});

describe("deploy/mediagate.service", () => {
  const hasSystemd = works("systemd-analyze", ["--version"]);

  it.skipIf(!hasSystemd)("passes systemd-analyze verify without a warning", async () => {
    // The unit as an operator installs it for a clone in this checkout's place, with this node.
    const dir = await createTempHome("unit");
    try {
      const unit = (await readFile(join(RepoRoot, "deploy/mediagate.service"), "utf8"))
        .replaceAll("/opt/mediagate", RepoRoot.replace(/\/$/, ""))
        .replaceAll("/usr/bin/node", process.execPath);
      expect(unit).toContain("EnvironmentFile=-/etc/mediagate/mediagate.env");
      expect(unit).toMatch(/^Restart=on-failure$/m);
      const file = join(dir, "mediagate.service");
      await writeFile(file, unit);
      const ran = await run("systemd-analyze", ["verify", file], {
        PATH: process.env.PATH ?? "/usr/bin:/bin",
      });
      expect(ran.stderr).toBe("");
      expect(ran.code).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
