import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyEnv } from "../config/env.js";
import { type HealthReport, startHealthServer } from "../health/server.js";
import { runDoctor } from "./doctor.js";

/** Runs against the real Docker engine (the busybox test image is present, others are not). */
describe("mediagate doctor", () => {
  let dir = "";
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "mg-doctor-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function doctor(yaml: string, env = emptyEnv(dir)) {
    const file = join(dir, `${Math.random()}.yaml`);
    await writeFile(file, yaml);
    const lines: string[] = [];
    const code = await runDoctor({ config: file, env }, (l) => lines.push(l));
    return { code, lines };
  }

  it("passes with a valid config, a reachable engine and the image present", async () => {
    const { code, lines } = await doctor(
      "profiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:test }\n",
    );
    expect(lines[0]).toMatch(/^✔ config: /);
    expect(lines).toContain("✔ docker: reachable at unix:///var/run/docker.sock");
    expect(lines).toContain("✔ image: mediagate-sandbox:test present");
    expect(code).toBe(0);
  });

  it("fails on a missing image, naming it", async () => {
    const { code, lines } = await doctor(
      "profiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:absent-xyz }\n",
    );
    expect(lines.some((l) => l.startsWith("✖ image: mediagate-sandbox:absent-xyz not found"))).toBe(
      true,
    );
    expect(code).toBe(1);
  });

  it("fails on an unreachable engine, naming the endpoint", async () => {
    const host = `unix://${join(dir, "none.sock")}`;
    const { code, lines } = await doctor("concurrency: 1\n", {
      ...emptyEnv(dir),
      dockerHost: host,
    });
    const docker = lines.find((l) => l.includes("docker:"));
    expect(docker).toMatch(/^✖ docker: /);
    expect(docker).toContain(join(dir, "none.sock"));
    expect(code).toBe(1);
  });

  it("fails on an invalid config with the key, value and expectation", async () => {
    const { code, lines } = await doctor("concurrency: lots\n");
    expect(lines[0]).toContain('concurrency: got "lots", expected a number');
    expect(code).toBe(1);
  });

  it("shows a running gateway's channel states from its health endpoint, failing on one that is not up", async () => {
    const report: HealthReport = {
      status: "degraded",
      channels: [
        { platform: "telegram", profile: "default", state: "up", sinceMs: 0 },
        {
          platform: "discord",
          profile: "default",
          state: "retrying",
          sinceMs: 0,
          detail: "409 Conflict: another process is polling",
        },
      ],
      journal: { writable: true },
      engine: { reachable: true },
      queue: { running: 0, queued: 0 },
      outbox: { scheduled: 0 },
    };
    const server = await startHealthServer("127.0.0.1:0", async () => report);
    try {
      const listen = server.url.replace("http://", "");
      const { code, lines } = await doctor(
        `health: { listen: "${listen}" }\nprofiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:test }\n`,
      );
      expect(lines).toContain("✔ channel telegram (default): up");
      expect(lines).toContain(
        "✖ channel discord (default): retrying (409 Conflict: another process is polling)",
      );
      expect(lines).toContain("✔ journal: writable");
      expect(code).toBe(1);
    } finally {
      await server.close();
    }
  });

  it("says so when the configured gateway does not answer", async () => {
    const { code, lines } = await doctor(
      'health: { listen: "127.0.0.1:9" }\nprofiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:test }\n',
    );
    expect(lines.filter((l) => l.includes("gateway"))).toEqual([
      expect.stringMatching(/^✖ gateway: no answer from http:\/\/127\.0\.0\.1:9\/health/),
    ]);
    expect(code).toBe(1);
  });
});
