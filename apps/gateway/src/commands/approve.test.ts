import { describe, expect, it } from "vitest";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import type { PairingApproveResult } from "../state/pairing.js";
import { approveInChat, describePairingRequest, describeSpan } from "./approve.js";

const profile = resolveConfig(
  { profiles: [{ name: "p", access: "pairing" }] },
  { env: emptyEnv("/tmp/mg-approve") },
).profiles[0]!;
const now = Date.UTC(2026, 0, 1, 7, 0);

/** A store that answers `result` and records what it was asked. */
function store(result: PairingApproveResult) {
  const asked: unknown[][] = [];
  return {
    asked,
    approvePairing: async (...args: unknown[]) => {
      asked.push(args);
      return result;
    },
  };
}

describe("pairing texts", () => {
  it("spans: minutes rounded up, at least one, whole hours from two", () => {
    expect(describeSpan(1)).toBe("1 minute");
    expect(describeSpan(61_000)).toBe("2 minutes");
    expect(describeSpan(3_600_000)).toBe("60 minutes");
    expect(describeSpan(7_200_000)).toBe("2 hours");
  });

  it("tell an unknown user their code, what to do with it and that the message was not kept", () => {
    const text = describePairingRequest(
      { status: "issued", code: "ABCDEFGH", expiresAtMs: now + 3_600_000 },
      "telegram:5",
      now,
    );
    expect(text).toContain("Your one-time code: ABCD-EFGH");
    expect(text).toContain("/approve ABCD-EFGH");
    expect(text).toContain("expires in 60 minutes");
    expect(text).toContain("send it again");
    expect(
      describePairingRequest(
        { status: "pending", code: "ABCDEFGH", expiresAtMs: now + 60_000 },
        "telegram:5",
        now,
      ),
    ).toContain("already have a code waiting for an admin: ABCD-EFGH");
    expect(describePairingRequest({ status: "full" }, "telegram:5", now)).toMatch(
      /try again later/i,
    );
  });
});

describe("approveInChat", () => {
  it("asks the store with the normalized code and the profile's attempt cap", async () => {
    const s = store({ status: "approved", user: "telegram:5", userName: "eve", chatId: "5" });
    const outcome = await approveInChat(profile, s, "telegram:1", " abcd efgh ", now);
    expect(s.asked).toEqual([["ABCDEFGH", "telegram:1", { maxFailed: 5, lockMs: 900_000 }]]);
    expect(outcome.approved).toEqual({ user: "telegram:5", chatId: "5" });
    expect(outcome.text).toContain("Approved telegram:5 (eve)");
    expect(outcome.text).toContain("mediagate pairing revoke telegram:5");
  });

  it("answers a missing or impossible code without asking the store (no attempt used)", async () => {
    const s = store({ status: "unknown", attemptsLeft: 4 });
    expect((await approveInChat(profile, s, "telegram:1", undefined, now)).text).toMatch(/^Usage/);
    expect((await approveInChat(profile, s, "telegram:1", "hello", now)).text).toContain(
      "is not a pairing code",
    );
    expect(s.asked).toEqual([]);
  });

  it("echoes an impossible code cut between characters, never inside an emoji", async () => {
    const s = store({ status: "unknown", attemptsLeft: 4 });
    const typed = `${"x".repeat(39)}🔑 more`;
    const { text } = await approveInChat(profile, s, "telegram:1", typed, now);
    expect(text).toContain(`"${"x".repeat(39)}" is not a pairing code`);
    expect(text).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
  });

  it("says how many wrong codes are left, when it locked, and until when", async () => {
    const left = await approveInChat(
      profile,
      store({ status: "unknown", attemptsLeft: 1 }),
      "telegram:1",
      "ABCD-EFGH",
      now,
    );
    expect(left.text).toContain("No pending code ABCD-EFGH");
    expect(left.text).toContain("1 more wrong code locks /approve");
    const locking = await approveInChat(
      profile,
      store({ status: "unknown", attemptsLeft: 0, lockedUntilMs: now + 900_000 }),
      "telegram:1",
      "ABCD-EFGH",
      now,
    );
    expect(locking.text).toContain("locked for 15 minutes (until 07:15 UTC)");
    const locked = await approveInChat(
      profile,
      store({ status: "locked", lockedUntilMs: now + 600_000 }),
      "telegram:1",
      "ABCD-EFGH",
      now,
    );
    expect(locked.text).toContain("10 minutes more (until 07:10 UTC); no code was checked");
    expect(locked.text).toContain("mediagate pairing approve CODE");
    expect(locked.approved).toBeUndefined();
  });
});
