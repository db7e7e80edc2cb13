import { DockerUnavailableError, ImageMissingError, SandboxLostError } from "@mediagate/sandbox";
import { describe, expect, it } from "vitest";
import { sandboxProblemOf, sandboxProblemText } from "./sandbox-errors.js";

const lost = new SandboxLostError("run", "session:a", "c0ffee", "engine-unreachable", {
  cause: new DockerUnavailableError("unix:///var/run/docker.sock", "connect ECONNREFUSED"),
});

describe("sandboxProblemOf", () => {
  it.each<[string, unknown, string | undefined]>([
    ["a lost sandbox", lost, "sandbox_lost"],
    [
      "a lost sandbox wrapped by an agent",
      new Error("tool failed", { cause: lost }),
      "sandbox_lost",
    ],
    [
      "an unreachable engine",
      new DockerUnavailableError("unix:///x", "ENOENT"),
      "docker_unavailable",
    ],
    ["a missing image", new ImageMissingError("img:1"), "image_missing"],
    ["anything else", new Error("boom"), undefined],
    ["a non-error", "boom", undefined],
  ])("%s → %s", (_, error, kind) => {
    expect(sandboxProblemOf(error)?.kind).toBe(kind);
  });

  it("tells the chat that the sandbox stopped mid-command and that resending starts a fresh one", () => {
    const problem = sandboxProblemOf(lost);
    expect(problem).toEqual({ kind: "sandbox_lost", reason: "engine-unreachable" });
    expect(sandboxProblemText(problem!)).toBe(
      "⚠️ The sandbox stopped while running that command (its container was removed or Docker went away). Send the message again to start a fresh one.",
    );
  });
});
