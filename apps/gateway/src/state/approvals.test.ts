import { beforeEach, describe, expect, it } from "vitest";
import { StateBackends, useStateBackend } from "../../test/fixtures/state-backends.js";
import type { ApprovalRecord } from "./approvals.js";
import type { StateStore } from "./state-store.js";

const record = (id: string, createdMs = 1_000, overrides: Partial<ApprovalRecord> = {}) =>
  ({
    id,
    sessionKey: "agent:p:telegram:dm:1",
    sessionId: "sid-1",
    platform: "telegram",
    chatId: "1",
    requester: "telegram:1",
    approvers: "sender",
    action: "$ rm -rf build",
    reason: "every action needs approval",
    waiter: "w1",
    createdMs,
    expiresMs: createdMs + 600_000,
    status: "pending",
    ...overrides,
  }) satisfies ApprovalRecord;

describe.each(StateBackends)("approvals in the state store on %s", (kind) => {
  const backend = useStateBackend(kind, "approvals");
  let nowMs = 2_000;
  let store: StateStore;

  beforeEach(async () => {
    store = await backend.open({ now: () => nowMs });
  });

  it("counts only the first decision: a second one changes nothing and says so", async () => {
    await store.addApproval(record("a"), 10, 1_000);
    const first = await store.decideApproval("a", "denied", "telegram:1", "Ada");
    nowMs = 2_001;
    const second = await store.decideApproval("a", "allowed", "telegram:2", "Bob");
    expect(first.decided).toBe(true);
    expect(second.decided).toBe(false);
    expect(second.record).toMatchObject({
      status: "denied",
      decidedBy: "telegram:1",
      decidedByName: "Ada",
      decidedMs: 2_000,
    });
  });

  it("keeps the record as it was asked, with its message once posted", async () => {
    const asked = record("a", 1_000, { threadId: "7" });
    await store.addApproval(asked, 10, 1_000);
    await store.setApprovalMessage("a", "55");
    expect(await store.getApproval("a")).toEqual({
      ...asked,
      messageId: "55",
      decidedBy: undefined,
      decidedByName: undefined,
      decidedMs: undefined,
    });
    expect(await store.getApproval("b")).toBeUndefined();
  });

  it("refuses a new approval once the profile's pending ones reach the cap", async () => {
    expect(await store.addApproval(record("a"), 2, 1_000)).toEqual({ added: true });
    expect(await store.addApproval(record("b"), 2, 1_000)).toEqual({ added: true });
    expect(await store.addApproval(record("c"), 2, 1_000)).toEqual({ added: false, pending: 2 });
    await store.decideApproval("a", "expired", "timer", undefined);
    expect(await store.addApproval(record("c"), 2, 1_000)).toEqual({ added: true });
  });

  it("holds the cap when two processes ask at once", async () => {
    const other = await backend.open({ now: () => nowMs });
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? store : other).addApproval(record(`r${i}`), 3, 1_000),
      ),
    );
    expect(results.filter((r) => r.added)).toHaveLength(3);
    expect(await store.recentApprovals(10)).toHaveLength(3);
  });

  it("drops decided approvals older than the keep time, never pending ones", async () => {
    await store.addApproval(record("old-decided", 1_000), 10, 5_000);
    await store.addApproval(record("old-pending", 1_000), 10, 5_000);
    await store.decideApproval("old-decided", "allowed", "telegram:1", undefined);
    await store.addApproval(record("new", 10_000), 10, 5_000);
    expect(await store.getApproval("old-decided")).toBeUndefined();
    expect((await store.getApproval("old-pending"))?.status).toBe("pending");
  });

  it("remembers an allow for the session until the session id changes", async () => {
    await store.addApproval(record("a"), 10, 1_000);
    expect(await store.sessionAllowed("sid-1")).toBe(false);
    await store.decideApproval("a", "allowed_session", "telegram:1", undefined);
    expect(await store.sessionAllowed("sid-1")).toBe(true);
    expect(await store.sessionAllowed("sid-2")).toBe(false);
  });

  it("finds the newest pending approval of a chat and thread, with its message", async () => {
    await store.addApproval(record("a", 1_000), 10, 1_000);
    await store.addApproval(record("b", 2_000), 10, 1_000);
    await store.addApproval(record("t", 3_000, { threadId: "7" }), 10, 1_000);
    await store.setApprovalMessage("b", "55");
    expect(await store.latestPendingApproval("telegram", "1", undefined)).toMatchObject({
      id: "b",
      messageId: "55",
    });
    expect((await store.latestPendingApproval("telegram", "1", "7"))?.id).toBe("t");
    expect(await store.latestPendingApproval("discord", "1", undefined)).toBeUndefined();
  });

  it("lists the newest approvals first, the later of two made at once first", async () => {
    await store.addApproval(record("a", 1_000), 10, 1_000);
    await store.addApproval(record("b", 1_000), 10, 1_000);
    await store.addApproval(record("c", 500), 10, 1_000);
    expect((await store.recentApprovals(2)).map((r) => r.id)).toEqual(["b", "a"]);
  });
});
