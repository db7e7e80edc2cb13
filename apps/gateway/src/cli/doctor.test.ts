import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { emptyEnv } from "../config/env.js";
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
});
