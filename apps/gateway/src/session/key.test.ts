import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ChatType } from "../channels/types.js";
import {
  buildSessionKey,
  parseSessionKey,
  type SessionKeyParts,
  type SessionKeyPolicy,
  upgradeLegacySessionKey,
} from "./key.js";

const base = { profile: "default", platform: "telegram", userId: "42" } as const;
const perUserGroups: SessionKeyPolicy = {
  groupSessionsPerUser: true,
  threadSessionsPerUser: false,
};
const sharedGroups: SessionKeyPolicy = {
  groupSessionsPerUser: false,
  threadSessionsPerUser: false,
};
const perUserThreads: SessionKeyPolicy = {
  groupSessionsPerUser: true,
  threadSessionsPerUser: true,
};

const table: [string, Partial<SessionKeyParts>, SessionKeyPolicy, string][] = [
  ["dm", { chatType: "dm", chatId: "42" }, perUserGroups, "agent:default:telegram:dm:42"],
  [
    "group, per user by default",
    { chatType: "group", chatId: "-100" },
    perUserGroups,
    "agent:default:telegram:group:-100:user:42",
  ],
  [
    "group shared when groupSessionsPerUser is off",
    { chatType: "group", chatId: "-100" },
    sharedGroups,
    "agent:default:telegram:group:-100",
  ],
  [
    "thread shared by its members by default",
    { chatType: "group", chatId: "-100", threadId: "7" },
    perUserGroups,
    "agent:default:telegram:group:-100:thread:7",
  ],
  [
    "thread per user with threadSessionsPerUser",
    { chatType: "group", chatId: "-100", threadId: "7" },
    perUserThreads,
    "agent:default:telegram:group:-100:thread:7:user:42",
  ],
  [
    "broadcast channel shared",
    { chatType: "channel", chatId: "-200" },
    perUserGroups,
    "agent:default:telegram:channel:-200",
  ],
  [
    "dm thread never per user",
    { chatType: "dm", chatId: "42", threadId: "3" },
    perUserThreads,
    "agent:default:telegram:dm:42:thread:3",
  ],
  [
    "empty thread id counts as none",
    { chatType: "group", chatId: "-100", threadId: "" },
    perUserGroups,
    "agent:default:telegram:group:-100:user:42",
  ],
  [
    "discord guild channel of a named profile",
    { profile: "work", platform: "discord", chatType: "group", chatId: "99", userId: "5" },
    perUserGroups,
    "agent:work:discord:group:99:user:5",
  ],
  [
    "an id holding : or % is escaped",
    { chatType: "group", chatId: "1:user:2", userId: "50%" },
    perUserGroups,
    "agent:default:telegram:group:1%3Auser%3A2:user:50%25",
  ],
];

describe("buildSessionKey", () => {
  it.each(table)("%s", (_name, parts, policy, expected) => {
    const full = { ...base, chatType: "dm", chatId: "0", ...parts } as SessionKeyParts;
    expect(buildSessionKey(full, policy)).toBe(expected);
  });

  it("is deterministic: same message, same key; different users in a group, different keys", () => {
    const parts: SessionKeyParts = { ...base, chatType: "group", chatId: "-1" };
    expect(buildSessionKey(parts)).toBe(buildSessionKey({ ...parts }));
    expect(buildSessionKey(parts)).not.toBe(buildSessionKey({ ...parts, userId: "43" }));
  });

  it("keeps forum topic 222 and member 222 of one group apart", () => {
    const group = { ...base, chatType: "group", chatId: "-100" } as const;
    const topic = buildSessionKey({ ...group, threadId: "222", userId: "1" });
    const member = buildSessionKey({ ...group, userId: "222" });
    expect(topic).not.toBe(member);
  });

  it("does not let an id holding : forge another chat's thread or user", () => {
    const forgedThread = buildSessionKey({ ...base, chatType: "dm", chatId: "1:3" });
    const realThread = buildSessionKey({ ...base, chatType: "dm", chatId: "1", threadId: "3" });
    expect(forgedThread).not.toBe(realThread);
    const forged = buildSessionKey({ ...base, chatType: "group", chatId: "-100:thread:7" });
    const real = buildSessionKey({ ...base, chatType: "group", chatId: "-100", threadId: "7" });
    expect(forged).not.toBe(real);
    const forgedUser = buildSessionKey({ ...base, chatType: "dm", chatId: "1:user:2" });
    const realUser = buildSessionKey({ ...base, chatType: "group", chatId: "1", userId: "2" });
    expect(forgedUser).not.toBe(realUser);
  });
});

/** Ids from a small pool (so that two messages often share parts) plus arbitrary ones. */
const anyId = fc.oneof(
  fc.constantFrom("1", "2", "1:2", "2:1", "thread", "user", ":", "%", "%3A", "1:thread:2"),
  fc.constantFrom("1:user:2", ""),
  fc.stringMatching(/^[12:%a-z]{0,6}$/),
  fc.string({ maxLength: 8 }),
);
const messages = fc.record({
  profile: fc.constantFrom("default", "work"),
  platform: fc.constantFrom("telegram", "discord", "console") as fc.Arbitrary<
    SessionKeyParts["platform"]
  >,
  chatType: fc.constantFrom<ChatType>("dm", "group", "channel"),
  chatId: anyId,
  threadId: fc.option(anyId, { nil: undefined }),
  userId: anyId,
});
const policies = fc.record({
  groupSessionsPerUser: fc.boolean(),
  threadSessionsPerUser: fc.boolean(),
});

/** What a key must tell apart: the message's parts that the policy keys on. */
function identity(parts: SessionKeyParts, policy: SessionKeyPolicy): string {
  const thread = parts.threadId === "" ? undefined : parts.threadId;
  const perUser =
    thread === undefined
      ? parts.chatType === "group" && policy.groupSessionsPerUser
      : parts.chatType !== "dm" && policy.threadSessionsPerUser;
  return JSON.stringify([
    parts.profile,
    parts.platform,
    parts.chatType,
    parts.chatId,
    thread ?? null,
    perUser ? parts.userId : null,
  ]);
}

describe("session key properties", () => {
  it("reads back every part it was built from", () => {
    fc.assert(
      fc.property(messages, policies, (parts, policy) => {
        const parsed = parseSessionKey(buildSessionKey(parts, policy));
        expect(parsed).toBeDefined();
        const thread = parts.threadId === "" ? undefined : parts.threadId;
        expect(parsed?.chatId).toBe(parts.chatId);
        expect(parsed?.chatType).toBe(parts.chatType);
        expect(parsed?.threadId).toBe(thread);
        if (parsed?.userId !== undefined) expect(parsed.userId).toBe(parts.userId);
      }),
    );
  });

  it("never maps two different (chat, thread, user) combinations to one key", () => {
    fc.assert(
      fc.property(messages, messages, policies, (a, b, policy) => {
        fc.pre(identity(a, policy) !== identity(b, policy));
        expect(buildSessionKey(a, policy)).not.toBe(buildSessionKey(b, policy));
      }),
      { numRuns: 2000 },
    );
  });

  it("keeps the key of a DM without a thread what it was (conversations survive)", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^-?[0-9]{1,15}$/), (id) => {
        const key = buildSessionKey({ ...base, chatType: "dm", chatId: id, userId: id });
        expect(key).toBe(`agent:default:telegram:dm:${id}`);
      }),
    );
  });
});

describe("upgradeLegacySessionKey", () => {
  it.each<[string, string | undefined]>([
    ["agent:p:telegram:dm:42", "agent:p:telegram:dm:42"],
    ["agent:p:telegram:group:-100", "agent:p:telegram:group:-100"],
    ["agent:p:telegram:dm:42:3", "agent:p:telegram:dm:42:thread:3"],
    ["agent:p:telegram:channel:-200:5", "agent:p:telegram:channel:-200:thread:5"],
    ["agent:p:telegram:group:-100:7:42", "agent:p:telegram:group:-100:thread:7:user:42"],
    ["agent:p:discord:group:99:5", undefined], // a thread, or a member: ambiguous
    ["agent:p:telegram:dm:42:3:4", undefined],
    ["agent:p:telegram:group:-100:7:42:9", undefined],
    ["agent:p:telegram", undefined],
    ["cli-session", undefined],
  ])("%s → %s", (old, upgraded) => {
    expect(upgradeLegacySessionKey(old)).toBe(upgraded);
  });

  it("gives what buildSessionKey gives today for every unambiguous old key", () => {
    const numeric = fc.stringMatching(/^-?[0-9]{1,6}$/);
    fc.assert(
      fc.property(
        fc.record({
          chatType: fc.constantFrom<ChatType>("dm", "group", "channel"),
          chatId: numeric,
          threadId: fc.option(numeric, { nil: undefined }),
          userId: numeric,
        }),
        policies,
        (message, policy) => {
          const parts = { ...base, ...message };
          const current = buildSessionKey(parts, policy);
          const old = current.replace(":thread:", ":").replace(":user:", ":");
          const upgraded = upgradeLegacySessionKey(old);
          if (upgraded !== undefined) expect(upgraded).toBe(current);
          else expect(message.chatType === "group" && old.split(":").length === 6).toBe(true);
        },
      ),
    );
  });
});
