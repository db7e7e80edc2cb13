import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { connectDocker } from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testEnvironment } from "../../../../test-support/engine.js";
import { emptyEnv, readEnv } from "../config/env.js";
import { type HealthReport, startHealthServer } from "../health/server.js";
import { Redactor } from "../redact.js";
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
  /** The test run's engine (`DOCKER_HOST` when set) and nothing else. */
  const testEnv = () => readEnv(testEnvironment(dir));

  async function doctor(yaml: string, env = testEnv(), probeTimeoutMs?: number) {
    const file = join(dir, `${Math.random()}.yaml`);
    await writeFile(file, yaml);
    const lines: string[] = [];
    const code = await runDoctor({ config: file, env, probeTimeoutMs }, (l) => lines.push(l));
    return { code, lines };
  }

  it("passes with a valid config, a reachable engine and the image present", async () => {
    const { code, lines } = await doctor(
      "profiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:test }\n",
    );
    expect(lines[0]).toMatch(/^✔ config: /);
    const { endpoint } = connectDocker({ host: testEnv().dockerHost });
    expect(lines).toContain(`✔ docker: reachable at ${endpoint}`);
    expect(lines).toContain("✔ image: mediagate-sandbox:test present");
    expect(code).toBe(0);
  });

  it("fails on a LOG_LEVEL that start would refuse", async () => {
    const { code, lines } = await doctor(
      "profiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:test }\n",
      readEnv({ ...testEnvironment(dir), LOG_LEVEL: "verbose" }),
    );
    expect(lines[0]).toMatch(/^✔ config: /);
    expect(lines).toContain(
      '✖ log level: LOG_LEVEL="verbose" is not a log level; use one of: fatal, error, warn, info, debug, trace, silent',
    );
    expect(code).toBe(1);
  });

  it("fails on a missing image the engine cannot pull, naming it and the offline build", async () => {
    const { code, lines } = await doctor(
      "profiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:absent-xyz }\n",
    );
    const at = lines.findIndex((l) =>
      l.startsWith(
        "✖ image: mediagate-sandbox:absent-xyz not found on the Docker host, and the engine cannot pull it (",
      ),
    );
    expect(at, lines.join("\n")).toBeGreaterThan(0);
    expect(lines[at + 1]).toMatch(
      /^ {2}fix: build it offline with scripts\/build-sandbox-image\.sh mediagate-sandbox:absent-xyz \(busybox\)/,
    );
    expect(code).toBe(1);
  });

  it("never suggests building busybox under the name of another image", async () => {
    const { code, lines } = await doctor(
      "profiles:\n  - name: default\n    sandbox: { image: python:3.12-slim }\n",
    );
    const at = lines.findIndex((l) => l.startsWith("✖ image: python:3.12-slim not found"));
    expect(at, lines.join("\n")).toBeGreaterThan(0);
    const fix = lines[at + 1] ?? "";
    expect(fix).not.toContain("build-sandbox-image.sh python:3.12-slim");
    expect(fix).toContain("docker pull python:3.12-slim");
    expect(fix).toContain(
      "scripts/build-sandbox-image.sh mediagate-sandbox:local and set sandbox.image: mediagate-sandbox:local",
    );
    expect(code).toBe(1);
  });

  it("fails on an unreachable engine, naming the endpoint", async () => {
    const host = `unix://${join(dir, "none.sock")}`;
    const { code, lines } = await doctor("concurrency: 1\n", {
      ...emptyEnv(dir),
      dockerHost: host,
    });
    const at = lines.findIndex((l) => l.includes("docker:"));
    expect(lines[at]).toMatch(/^✖ docker: /);
    expect(lines[at]).toContain(join(dir, "none.sock"));
    expect(lines[at + 1]).toMatch(/^ {2}fix: start the Docker engine .*DOCKER_HOST/);
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
    const server = await startHealthServer("127.0.0.1:0", async () => report, new Redactor());
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

  it("bounds each probe: an endpoint that never answers fails after the probe timeout", async () => {
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    const { port } = silent.address() as AddressInfo;
    try {
      const root = `http://127.0.0.1:${port}`;
      const { code, lines } = await doctor(
        [
          "profiles:",
          "  - name: default",
          `    telegram: { token: "123456:silent-token-secret", apiRoot: "${root}" }`,
          '    allowedUsers: ["telegram:1"]',
          `    agent: { kind: openai, baseUrl: "${root}/v1", apiKey: "sk-silent-key", model: "m" }`,
          "    sandbox: { image: mediagate-sandbox:test }",
          "",
        ].join("\n"),
        testEnv(),
        150,
      );
      expect(lines).toContain(
        `✖ telegram (default): no answer from ${root} (no answer within 150 ms)`,
      );
      expect(lines).toContain(
        `✖ agent (default): nothing answers at ${root}/v1 (no answer within 150 ms)`,
      );
      expect(lines.join("\n")).not.toContain("silent-token-secret");
      expect(code).toBe(1);
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it("names what answered at health.listen when it is no health report, not the config", async () => {
    const answers = [
      { status: 200, type: "application/json", body: '{"status":"UP"}' },
      { status: 500, type: "text/plain", body: "health report failed: journal closed\n" },
    ];
    let next = 0;
    const other = createServer((_, response) => {
      const answer = answers[next++ % answers.length]!;
      response.writeHead(answer.status, { "content-type": answer.type }).end(answer.body);
    });
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    const { port } = other.address() as AddressInfo;
    const yaml = `health: { listen: "127.0.0.1:${port}" }\nprofiles:\n  - name: default\n    sandbox: { image: mediagate-sandbox:test }\n`;
    const url = `http://127.0.0.1:${port}/health`;
    try {
      const json = await doctor(yaml);
      expect(json.lines[0]).toMatch(/^✔ config: /);
      expect(json.lines.filter((l) => l.startsWith("✖ config"))).toEqual([]);
      expect(json.lines).toContain(
        `✖ gateway: ${url} answered 200 with something that is not a mediagate health report; is health.listen this gateway's?`,
      );
      expect(json.code).toBe(1);
      const failed = await doctor(yaml);
      expect(failed.lines.filter((l) => l.startsWith("✖ config"))).toEqual([]);
      expect(failed.lines).toContain(
        `✖ gateway: ${url} answered 500: health report failed: journal closed`,
      );
      expect(failed.code).toBe(1);
    } finally {
      other.closeAllConnections();
      await new Promise((resolve) => other.close(resolve));
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
