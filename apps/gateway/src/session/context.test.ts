import { setImmediate as nextTick } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { type SessionContext, SessionScope } from "./context.js";

function ctx(user: string): SessionContext {
  return {
    profile: "p",
    platform: "telegram",
    chatId: `chat-${user}`,
    chatType: "dm",
    userId: user,
    messageId: `m-${user}`,
    sessionKey: `agent:p:telegram:dm:chat-${user}`,
    sessionId: `sid-${user}`,
  };
}

describe("SessionScope", () => {
  it("two concurrent turns never see each other's identity across interleaved awaits", async () => {
    const scope = new SessionScope();
    const seen: [string, string | undefined][] = [];
    let releaseA!: () => void;
    const gateA = new Promise<void>((r) => {
      releaseA = r;
    });
    const turn = async (user: string, gate?: Promise<void>) => {
      for (let i = 0; i < 5; i++) {
        seen.push([user, scope.current()?.userId]);
        await nextTick();
        if (gate && i === 2) await gate;
        // a sub-task scheduled from inside the turn keeps the identity too
        await new Promise<void>((r) =>
          setTimeout(() => {
            seen.push([user, scope.sessionKey()]);
            r();
          }, 0),
        );
      }
    };
    const a = scope.run(ctx("alice"), () => turn("alice", gateA));
    const b = scope.run(ctx("bob"), () => turn("bob"));
    await b;
    releaseA();
    await a;
    expect(seen.length).toBe(20);
    for (const [user, value] of seen) {
      expect([user, `agent:p:telegram:dm:chat-${user}`]).toContain(value);
    }
    expect(seen.filter(([u]) => u === "alice").length).toBe(10);
  });

  it("a bound context wins over the env fallback; the fallback answers only when unbound", () => {
    const scope = new SessionScope({ fallbackSessionKey: "agent:cli:console:dm:local" });
    expect(scope.sessionKey()).toBe("agent:cli:console:dm:local");
    expect(scope.current()).toBeUndefined();
    scope.run(ctx("carol"), () => {
      expect(scope.sessionKey()).toBe("agent:p:telegram:dm:chat-carol");
    });
    expect(new SessionScope().sessionKey()).toBeUndefined();
  });
});
