import { join } from "node:path";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { resolveSlot } from "./slot.js";
import {
  formatSlotKey,
  keepsDirsBySlotLabel,
  parseSlotKey,
  profileSlotKey,
  type SlotKey,
  SlotKeyError,
  slotDirectoryFor,
  slotTraits,
} from "./slot-key.js";
import { slotPaths } from "./slot-paths.js";

const homes = { profileHome: "/h/profiles/work", rootHome: "/h" };

describe("parseSlotKey", () => {
  it("refuses the empty string", () => {
    expect(() => parseSlotKey("")).toThrow(SlotKeyError);
  });

  it.each<[string, SlotKey]>([
    ["default", { kind: "default" }],
    ["profile:work", { kind: "profile", name: "work" }],
    ["shared:team", { kind: "shared", key: "team" }],
    ["shared:a:b", { kind: "shared", key: "a:b" }],
    ["session:agent:w:telegram:dm:1", { kind: "session", sessionKey: "agent:w:telegram:dm:1" }],
    ["session:", { kind: "session", sessionKey: "" }],
    ["task-9", { kind: "task", taskId: "task-9" }],
    ["defaults", { kind: "task", taskId: "defaults" }],
    ["Default", { kind: "task", taskId: "Default" }],
    ["shared_team", { kind: "task", taskId: "shared_team" }],
    ["sharedteam", { kind: "task", taskId: "sharedteam" }],
  ])("%j → %j", (slot, key) => {
    expect(parseSlotKey(slot)).toEqual(key);
  });
});

describe("slot traits", () => {
  it.each<[string, boolean, boolean, boolean, string]>([
    // slot, spans profiles, persistent data, shared by sessions, directory
    ["default", false, true, true, "/h/profiles/work/sandboxes/docker/default"],
    ["profile:work", false, true, true, "/h/profiles/work/sandboxes/docker/profile_work-"],
    ["shared:team", true, true, true, "/h/sandboxes/docker/shared_team-"],
    ["session:k", false, false, false, "/h/profiles/work/sandboxes/docker/session_k-"],
    ["task-1", false, false, true, "/h/profiles/work/sandboxes/docker/task-1"],
  ])("%s", (slot, spans, persistent, shared, dir) => {
    expect(slotTraits(slot)).toMatchObject({
      spansProfiles: spans,
      persistentData: persistent,
      sharedBySessions: shared,
      dirHome: spans ? "root" : "profile",
    });
    expect(slotDirectoryFor(slot, homes).startsWith(dir)).toBe(true);
  });

  it("puts only the data slots under the shared slots root when one is set", () => {
    const shared = { ...homes, dataSlotsRoot: "/mnt/slots" };
    // Laid out like a home: the slot's locks and disk image stay inside the root too.
    const root = "/mnt/slots/sandboxes/docker";
    expect(slotDirectoryFor("default", shared)).toBe(`${root}/default`);
    expect(slotDirectoryFor("profile:work", shared).startsWith(`${root}/profile_work-`)).toBe(true);
    expect(slotDirectoryFor("shared:team", shared).startsWith(`${root}/shared_team-`)).toBe(true);
    // What is made private (0700) around a slot stays inside the root, never its parent.
    const paths = slotPaths(slotDirectoryFor("default", shared));
    expect([paths.sandboxesDir, paths.kindDir, paths.lockDir, paths.diskDir]).toEqual([
      "/mnt/slots/sandboxes",
      root,
      "/mnt/slots/sandboxes/locks/docker",
      "/mnt/slots/sandboxes/disks/docker",
    ]);
    expect(slotDirectoryFor("session:k", shared)).toBe(slotDirectoryFor("session:k", homes));
    expect(slotDirectoryFor("task-1", shared)).toBe(slotDirectoryFor("task-1", homes));
  });

  it("gives the default profile the default slot and a named profile its own", () => {
    expect(formatSlotKey(profileSlotKey("default"))).toBe("default");
    expect(formatSlotKey(profileSlotKey("work"))).toBe("profile:work");
  });

  it("reads containers made before the persistent label by their label-safe slot", () => {
    expect(keepsDirsBySlotLabel("default")).toBe(true);
    expect(keepsDirsBySlotLabel("profile_work")).toBe(true);
    expect(keepsDirsBySlotLabel("shared_team")).toBe(true);
    expect(keepsDirsBySlotLabel("session_agent_x")).toBe(false);
    expect(keepsDirsBySlotLabel("task-1")).toBe(false);
    expect(keepsDirsBySlotLabel("defaults")).toBe(false);
  });
});

describe("formatSlotKey refuses task ids that would name another slot", () => {
  it.each(["default", "shared:team", "profile:work", "session:agent:w:telegram:dm:1", ""])(
    "%j",
    (taskId) => {
      expect(() => formatSlotKey({ kind: "task", taskId })).toThrow(SlotKeyError);
    },
  );

  it("so a task named like a shared slot cannot join that slot's container", () => {
    const scope = { backend: "docker" as const, persistent: false, profile: "work" };
    expect(() => resolveSlot("shared:team", scope)).toThrow(SlotKeyError);
    expect(() => resolveSlot("profile:other", { ...scope, sessionKey: "s" })).toThrow(SlotKeyError);
  });
});

const slotKeys: fc.Arbitrary<SlotKey> = fc.oneof(
  fc.constant<SlotKey>({ kind: "default" }),
  fc.string().map<SlotKey>((name) => ({ kind: "profile", name })),
  fc.string().map<SlotKey>((key) => ({ kind: "shared", key })),
  fc.string().map<SlotKey>((sessionKey) => ({ kind: "session", sessionKey })),
  fc
    .string({ minLength: 1 })
    .filter((taskId) => parseSlotKey(taskId).kind === "task")
    .map<SlotKey>((taskId) => ({ kind: "task", taskId })),
);

/** Strings that start like the reserved forms more often than uniform strings would. */
const slotStrings = fc.oneof(
  fc.string({ minLength: 1 }),
  fc
    .tuple(fc.constantFrom("default", "profile:", "shared:", "session:", "shared", ""), fc.string())
    .map(([prefix, rest]) => prefix + rest)
    .filter((slot) => slot.length > 0),
);

describe("slot-key grammar properties", () => {
  it("reads every non-empty string as exactly one slot, and writes it back unchanged", () => {
    fc.assert(
      fc.property(slotStrings, (slot) => {
        expect(formatSlotKey(parseSlotKey(slot))).toBe(slot);
      }),
    );
  });

  it("writes every slot key so that it reads back as the same key", () => {
    fc.assert(
      fc.property(slotKeys, (key) => {
        expect(parseSlotKey(formatSlotKey(key))).toEqual(key);
      }),
    );
  });

  it("never writes two different slot keys as one string", () => {
    fc.assert(
      fc.property(slotKeys, slotKeys, (a, b) => {
        fc.pre(JSON.stringify(a) !== JSON.stringify(b));
        expect(formatSlotKey(a)).not.toBe(formatSlotKey(b));
      }),
    );
  });

  it("puts exactly the slots that span profiles under the root home", () => {
    fc.assert(
      fc.property(slotKeys, (key) => {
        const dir = slotDirectoryFor(formatSlotKey(key), homes);
        const root = key.kind === "shared" ? homes.rootHome : homes.profileHome;
        expect(dir.startsWith(join(root, "sandboxes", "docker"))).toBe(true);
      }),
    );
  });
});
