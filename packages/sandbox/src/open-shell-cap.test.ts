import { describe, expect, it } from "vitest";
import { Defaults } from "./defaults.js";
import { maxOpenShellsOf } from "./open-shell-cap.js";

const MiB = 1024 * 1024;

describe("maxOpenShellsOf", () => {
  it("holds 300 sessions' shells with the default limits, leaving 3/8 of the pids to commands", () => {
    const cap = maxOpenShellsOf(Defaults.settings);
    expect(cap).toBeGreaterThanOrEqual(300);
    expect(cap).toBe(320);
    expect(Defaults.settings.pidsLimit - cap).toBe(192);
  });

  it("follows the pids limit, and a small memory ceiling before it", () => {
    const settings = { pidsLimit: 512, memoryBytes: 1024 * MiB };
    expect(maxOpenShellsOf({ ...settings, pidsLimit: 24 })).toBe(15);
    expect(maxOpenShellsOf({ ...settings, pidsLimit: 4096 })).toBe(512);
    expect(maxOpenShellsOf({ ...settings, memoryBytes: 64 * MiB })).toBe(32);
    expect(maxOpenShellsOf({ ...settings, pidsLimit: 1 })).toBe(1);
  });

  it("takes a configured maxOpenShells as it is", () => {
    expect(maxOpenShellsOf({ pidsLimit: 512, memoryBytes: 1024 * MiB, maxOpenShells: 64 })).toBe(
      64,
    );
  });
});
