import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { Defaults } from "./defaults.js";
import { SandboxUids } from "./exec-user.js";
import { exactEntry } from "./kill-script.js";
import { sessionHash } from "./session-hash.js";
import { firstCandidateUid } from "./session-user.js";

describe("firstCandidateUid", () => {
  it("is the same for a session every time and lies in the session range, above the one-shot uid", () => {
    fc.assert(
      fc.property(fc.string(), (key) => {
        const uid = firstCandidateUid(sessionHash(key));
        expect(uid).toBe(firstCandidateUid(sessionHash(key)));
        expect(uid).toBeGreaterThan(Defaults.sessionUidBase);
        expect(uid).toBeLessThanOrEqual(SandboxUids.max);
      }),
      { numRuns: 200 },
    );
  });

  it("spreads sessions: 1000 sessions rarely share a first candidate", () => {
    const uids = new Set(
      Array.from({ length: 1000 }, (_, i) => firstCandidateUid(sessionHash(`s${i}`))),
    );
    expect(uids.size).toBeGreaterThan(995);
  });
});

describe("exactEntry", () => {
  it("matches only the whole entry, with regex characters taken literally", () => {
    const pattern = new RegExp(exactEntry("MEDIAGATE_CMD", "a.b+c"));
    expect(pattern.test("MEDIAGATE_CMD=a.b+c")).toBe(true);
    expect(pattern.test("MEDIAGATE_CMD=axbbc")).toBe(false);
    expect(pattern.test("XMEDIAGATE_CMD=a.b+c")).toBe(false);
    expect(pattern.test("MEDIAGATE_CMD=a.b+cd")).toBe(false);
  });
});
