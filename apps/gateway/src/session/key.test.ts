import { describe, expect, it } from "vitest";
import { buildSessionKey, type SessionKeyParts, type SessionKeyPolicy } from "./key.js";

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
    "agent:default:telegram:group:-100:42",
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
    "agent:default:telegram:group:-100:7",
  ],
  [
    "thread per user with threadSessionsPerUser",
    { chatType: "group", chatId: "-100", threadId: "7" },
    perUserThreads,
    "agent:default:telegram:group:-100:7:42",
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
    "agent:default:telegram:dm:42:3",
  ],
  [
    "empty thread id counts as none",
    { chatType: "group", chatId: "-100", threadId: "" },
    perUserGroups,
    "agent:default:telegram:group:-100:42",
  ],
  [
    "discord guild channel of a named profile",
    { profile: "work", platform: "discord", chatType: "group", chatId: "99", userId: "5" },
    perUserGroups,
    "agent:work:discord:group:99:5",
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
});
