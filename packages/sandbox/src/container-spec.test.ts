import { describe, expect, it } from "vitest";
import { createOptions } from "./container-spec.js";
import { Defaults } from "./defaults.js";
import { bindsSandboxMount } from "./mount-points.js";
import type { SandboxSettings } from "./types.js";

const owner = { install: "0123456789ab", profile: "work" };

function plan(overrides: Partial<SandboxSettings> = {}) {
  const settings: SandboxSettings = { ...Defaults.settings, image: "img", ...overrides };
  return createOptions({ owner, slot: "default", slotDir: "/h/slot", settings, name: "n" });
}

describe("bindsSandboxMount", () => {
  it("finds volumes at the slot's and the scratch mount points, however written, and below /run/mediagate", () => {
    const at = (target: string) => bindsSandboxMount(`/srv/x:${target}:rw`);
    for (const target of ["/tmp", "/tmp/", "/var//tmp", "/run/mediagate/", "/run/mediagate/s"]) {
      expect(at(target), target).toBe(true);
    }
    for (const target of ["/workspace", "/root/."]) expect(at(target), target).toBe(true);
    for (const target of ["/tmp/cache", "/workspace/data", "/run", "/run/mediagate-x", "/data"]) {
      expect(at(target), target).toBe(false);
    }
  });
});

describe("createOptions", () => {
  it("makes the root filesystem read-only with /tmp, /var/tmp and /run/mediagate sized", () => {
    const { HostConfig } = plan({ scratchBytes: 4096 * 1024 });
    expect(HostConfig?.ReadonlyRootfs).toBe(true);
    expect(HostConfig?.Tmpfs).toEqual({
      "/tmp": "rw,exec,nosuid,nodev,size=4194304,mode=1777",
      "/var/tmp": "rw,exec,nosuid,nodev,size=4194304,mode=1777",
    });
    expect(HostConfig?.Mounts).toEqual([
      expect.objectContaining({
        Type: "volume",
        Source: "",
        Target: "/run/mediagate",
        VolumeOptions: expect.objectContaining({
          Labels: { "mediagate.install": owner.install, "mediagate.profile": "work" },
          DriverConfig: {
            Name: "local",
            Options: {
              type: "tmpfs",
              device: "tmpfs",
              o: "size=4194304,mode=0711,nosuid,nodev,noexec",
            },
          },
        }),
      }),
    ]);
  });

  it("sizes them by Defaults.settings.scratchBytes unless configured", () => {
    expect(plan().HostConfig?.Tmpfs?.["/tmp"]).toContain(`size=${Defaults.settings.scratchBytes},`);
  });

  it("leaves a scratch directory to a configured volume that binds it", () => {
    const { HostConfig } = plan({ volumes: ["/srv/cache:/var/tmp:rw"] });
    expect(Object.keys(HostConfig?.Tmpfs ?? {})).toEqual(["/tmp"]);
    expect(HostConfig?.Binds).toContain("/srv/cache:/var/tmp:rw");
  });

  it("compares mount points as the engine does: a volume at /tmp/ binds /tmp", () => {
    const { HostConfig } = plan({ volumes: ["/srv/a:/tmp/", "/srv/b:/var/./tmp:ro"] });
    expect(HostConfig?.Tmpfs).toEqual({});
  });

  it("adds the slot's tmpfs mounts beside them for a tmpfs filesystem", () => {
    const { HostConfig } = plan({ filesystem: "tmpfs" });
    expect(Object.keys(HostConfig?.Tmpfs ?? {}).sort()).toEqual([
      "/root",
      "/tmp",
      "/var/tmp",
      "/workspace",
    ]);
    expect(HostConfig?.Binds).toEqual([]);
  });
});
