import { describe, expect, it } from "vitest";
import type { ApprovalSettings } from "../config/types.js";
import { approvalReason, commandUsesNetwork, commandWritesOutside } from "./rules.js";

const rules = (ask: ApprovalSettings["ask"]): ApprovalSettings => ({
  ask,
  approvers: "sender",
  expiresSeconds: 600,
});

describe("approval rules", () => {
  it("never asks under never, always asks under always", () => {
    const action = { kind: "command", command: "ls" } as const;
    expect(approvalReason(action, rules("never"))).toBeUndefined();
    expect(approvalReason(action, rules("always"))).toBe("every action needs approval");
  });

  it("asks for a command matching a pattern, case-insensitively", () => {
    const settings = rules({ commands: ["\\brm\\s+-rf\\b", "^git push"] });
    expect(approvalReason({ kind: "command", command: "RM -RF build" }, settings)).toMatch(
      /pattern/,
    );
    expect(approvalReason({ kind: "command", command: "git push origin" }, settings)).toMatch(
      /pattern/,
    );
    expect(approvalReason({ kind: "command", command: "ls -la" }, settings)).toBeUndefined();
  });

  it.each([
    ["echo x > /etc/passwd", true],
    ["echo x >> /workspace/log", false],
    ["echo x 2>/dev/null", false],
    ["cp a.txt /usr/local/bin/a", true],
    ["cp a.txt /workspace/b", false],
    ["rm -rf ../../etc", true],
    ["cd / && touch x", true],
    ["cd sub && touch x", false],
    ["tee ~/.bashrc < x", true],
    ["dd if=/dev/zero of=/root/big bs=1M count=1", true],
    ["cat /etc/hosts", false],
  ])("writes outside /workspace: %s → %s", (command, expected) => {
    expect(commandWritesOutside(command)).toBe(expected);
  });

  it.each([
    ["curl -s example.org", true],
    ["ls && /usr/bin/wget x", true],
    ["sudo apt-get install jq", true],
    ["python3 fetch.py https://example.org", true],
    ["exec 3<>/dev/tcp/10.0.0.1/80", true],
    ["git status", true],
    ["ls -la", false],
    ["echo hello", false],
  ])("network use: %s → %s", (command, expected) => {
    expect(commandUsesNetwork(command)).toBe(expected);
  });

  it("asks for a write_file outside /workspace or over the size, not for a small one inside", () => {
    const settings = rules({ writesOutsideWorkspace: true, filesOverBytes: 100 });
    expect(approvalReason({ kind: "write", path: "/etc/cron.d/x", bytes: 10 }, settings)).toMatch(
      /outside/,
    );
    expect(
      approvalReason({ kind: "write", path: "notes/a.md", bytes: 10 }, settings),
    ).toBeUndefined();
    expect(approvalReason({ kind: "write", path: "../etc/x", bytes: 10 }, settings)).toMatch(
      /outside/,
    );
    expect(approvalReason({ kind: "write", path: "/workspace/big", bytes: 101 }, settings)).toMatch(
      /over 100 bytes/,
    );
  });
});
