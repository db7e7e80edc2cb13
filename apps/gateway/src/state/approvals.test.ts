import Database from "better-sqlite3";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  type ApprovalRecord,
  addApproval,
  decideApproval,
  getApproval,
  latestPending,
  sessionAllowed,
  setApprovalMessage,
} from "./approvals.js";
import { migrate } from "./schema.js";

let db: Database.Database;

beforeEach(() => {
  db = new Database(":memory:");
  migrate(db);
});

afterEach(() => {
  db.close();
});

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

describe("approvals in the state store", () => {
  it("counts only the first decision: a second one changes nothing and says so", () => {
    addApproval(db, record("a"), 10, 1_000);
    const first = decideApproval(db, "a", "denied", "telegram:1", "Ada", 2_000);
    const second = decideApproval(db, "a", "allowed", "telegram:2", "Bob", 2_001);
    expect(first.decided).toBe(true);
    expect(second.decided).toBe(false);
    expect(second.record).toMatchObject({
      status: "denied",
      decidedBy: "telegram:1",
      decidedByName: "Ada",
    });
  });

  it("refuses a new approval once the profile's pending ones reach the cap", () => {
    expect(addApproval(db, record("a"), 2, 1_000)).toEqual({ added: true });
    expect(addApproval(db, record("b"), 2, 1_000)).toEqual({ added: true });
    expect(addApproval(db, record("c"), 2, 1_000)).toEqual({ added: false, pending: 2 });
    decideApproval(db, "a", "expired", "timer", undefined, 2_000);
    expect(addApproval(db, record("c"), 2, 1_000)).toEqual({ added: true });
  });

  it("drops decided approvals older than the keep time, never pending ones", () => {
    addApproval(db, record("old-decided", 1_000), 10, 5_000);
    addApproval(db, record("old-pending", 1_000), 10, 5_000);
    decideApproval(db, "old-decided", "allowed", "telegram:1", undefined, 1_500);
    addApproval(db, record("new", 10_000), 10, 5_000);
    expect(getApproval(db, "old-decided")).toBeUndefined();
    expect(getApproval(db, "old-pending")?.status).toBe("pending");
  });

  it("remembers an allow for the session until the session id changes", () => {
    addApproval(db, record("a"), 10, 1_000);
    expect(sessionAllowed(db, "sid-1")).toBe(false);
    decideApproval(db, "a", "allowed_session", "telegram:1", undefined, 2_000);
    expect(sessionAllowed(db, "sid-1")).toBe(true);
    expect(sessionAllowed(db, "sid-2")).toBe(false);
  });

  it("finds the newest pending approval of a chat and thread, with its message", () => {
    addApproval(db, record("a", 1_000), 10, 1_000);
    addApproval(db, record("b", 2_000), 10, 1_000);
    addApproval(db, record("t", 3_000, { threadId: "7" }), 10, 1_000);
    setApprovalMessage(db, "b", "55");
    expect(latestPending(db, "telegram", "1", undefined)).toMatchObject({
      id: "b",
      messageId: "55",
    });
    expect(latestPending(db, "telegram", "1", "7")?.id).toBe("t");
    expect(latestPending(db, "discord", "1", undefined)).toBeUndefined();
  });
});
