import { describe, expect, it } from "vitest";
import { closedPort } from "../../../test-support/net.js";
import { connectDocker, DockerUnavailableError, Sandbox } from "../src/index.js";
import { TestImage, testEngine, testSettings } from "./helpers.js";

describe("connectDocker", () => {
  it("reaches the local engine and tells present from missing images", async () => {
    expect(connectDocker().endpoint).toBe("unix:///var/run/docker.sock");
    const engine = testEngine();
    await expect(engine.ping()).resolves.toBeUndefined();
    expect(await engine.hasImage(TestImage)).toBe(true);
    expect(await engine.hasImage("mediagate-no-such-image:never")).toBe(false);
  });

  it("names the socket it tried when the daemon is unreachable", async () => {
    const engine = connectDocker({ host: "unix:///nonexistent.sock" });
    const error = await engine.ping().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DockerUnavailableError);
    expect(error).toMatchObject({
      name: "DockerUnavailableError",
      endpoint: "unix:///nonexistent.sock",
    });
    expect(String(error)).toContain("unix:///nonexistent.sock");
  });

  it("names the host it tried when nothing listens on the TCP port", async () => {
    const port = await closedPort();
    const engine = connectDocker({ host: `tcp://127.0.0.1:${port}` });
    const error = await engine.hasImage(TestImage).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DockerUnavailableError);
    expect(error).toMatchObject({ endpoint: `tcp://127.0.0.1:${port}` });
    expect(String(error)).toContain(`tcp://127.0.0.1:${port}`);
  });

  it("gives the same single error from sandbox operations", async () => {
    const sandbox = new Sandbox({
      engine: connectDocker({ host: "unix:///nonexistent.sock" }),
      profile: "t-unreachable",
      profileHome: "/tmp/mg-unreachable",
      rootHome: "/tmp/mg-unreachable",
      settings: testSettings({ persistent: false }),
    });
    await expect(sandbox.acquire("default")).rejects.toMatchObject({
      name: "DockerUnavailableError",
      endpoint: "unix:///nonexistent.sock",
    });
    await expect(sandbox.list()).rejects.toBeInstanceOf(DockerUnavailableError);
  });

  it("never puts credentials of a host URL into the endpoint", () => {
    expect(connectDocker({ host: "tcp://user:secret@127.0.0.1:2375" }).endpoint).toBe(
      "tcp://127.0.0.1:2375",
    );
  });

  it("rejects schemes it cannot speak with a clear error", () => {
    expect(() => connectDocker({ host: "ssh://me@box" })).toThrow(/unsupported scheme ssh/);
  });
});
