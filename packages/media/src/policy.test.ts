import { describe, expect, it } from "vitest";
import { createPolicy } from "./policy.js";

const policy = createPolicy({
  allowDirs: ["/var/log/app", "/srv/share"],
  protectedHomes: ["/srv/mg", "/opt/profile-home"],
  homes: ["/srv/mg/sandboxes/docker/default/home"],
});

describe("delivery policy", () => {
  it.each([
    ["/etc/passwd", "system directory /etc"],
    ["/etc", "system directory /etc"],
    ["/proc/self/environ", "system directory /proc"],
    ["/sys/kernel/x", "system directory /sys"],
    ["/dev/sda", "system directory /dev"],
    ["/boot/vmlinuz", "system directory /boot"],
    ["/run/secrets/token", "system directory /run"],
    ["/var/lib/docker/x", "system directory /var/lib"],
    ["/var/log/syslog", "system directory /var/log"],
    ["/var/run/docker.sock", "docker socket"],
    ["/tmp/docker.sock", "docker socket"],
    ["/srv/mg/.env", "profile secret"],
    ["/srv/mg/.env.local", "profile secret"],
    ["/srv/mg/config.yaml", "profile secret"],
    ["/srv/mg/mediagate.yaml", "profile secret"],
    ["/srv/mg/auth.json", "profile secret"],
    ["/srv/mg/authorized", "profile secret"],
    ["/srv/mg/credentials", "profile secret"],
    ["/srv/mg/sessions/abc.json", "profile secret"],
    ["/srv/mg/state.db", "profile secret"],
    ["/srv/mg/state.db-wal", "profile secret"],
    ["/srv/mg/profiles/work/.env", "profile secret"],
    ["/srv/mg/profiles/work/state.db", "profile secret"],
    ["/opt/profile-home/config.yaml", "profile secret"],
    ["/root/.ssh/id_rsa", "home credential"],
    ["/root/.aws/credentials", "home credential"],
    ["/home/bob/.gnupg/secring.gpg", "home credential"],
    ["/home/bob/.netrc", "home credential"],
    ["/home/bob/.git-credentials", "home credential"],
    ["/home/bob/.npmrc", "home credential"],
    ["/home/bob/.pypirc", "home credential"],
    ["/home/bob/.kube/config", "home credential"],
    ["/home/bob/.docker/config.json", "home credential"],
    ["/home/bob/.config/gh/hosts.yml", "home credential"],
    ["/home/bob/.azure/x", "home credential"],
    ["/home/bob/.gcloud/x", "home credential"],
    ["/home/bob/.SSH/id_rsa", "home credential"],
    ["/srv/mg/.ssh/id_rsa", "home credential"],
    ["/srv/mg/sandboxes/docker/default/home/.ssh/id_rsa", "home credential"],
    ["/srv/mg/sandboxes/docker/default/home/.config/app.json", "home credential"],
  ])("denies %s (%s)", (path, reason) => {
    expect(policy.check(path)).toBe(reason);
  });

  it.each([
    "/workspace/out.png",
    "/srv/mg/sandboxes/docker/default/workspace/a.png",
    "/srv/mg/sandboxes/docker/default/workspace/.config/x.json",
    "/srv/mg/sandboxes/docker/default/workspace/config.yaml",
    "/srv/mg/sandboxes/docker/default/home/notes.txt",
    "/home/bob/project/.config/settings.json",
    "/home/bob/report.pdf",
    "/var/log/app/today.log",
    "/etcetera/file",
    "/tmp/out.png",
  ])("allows %s", (path) => {
    expect(policy.check(path)).toBeUndefined();
  });

  it("lets allow-dirs open system directories but never credentials", () => {
    const open = createPolicy({
      allowDirs: ["/etc", "/root"],
      protectedHomes: ["/etc/mg"],
      homes: [],
    });
    expect(open.check("/etc/hostname")).toBeUndefined();
    expect(open.check("/etc/mg/.env")).toBe("profile secret");
    expect(open.check("/root/.ssh/id_rsa")).toBe("home credential");
    expect(open.check("/etc/docker.sock")).toBe("docker socket");
  });

  it("judges the normalized path", () => {
    expect(policy.check("/tmp/../etc/passwd")).toBe("system directory /etc");
    expect(policy.check("//etc//passwd")).toBe("system directory /etc");
    expect(policy.check("/root/./.ssh/id_rsa")).toBe("home credential");
  });
});
