import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { resolveSlot, TaskRegistry } from "./slot.js";
import { parseSlotKey } from "./slot-key.js";
import type { BackendKind, SlotScope } from "./types.js";

const persistentDocker: SlotScope = { backend: "docker", persistent: true, profile: "default" };
const ephemeralDocker: SlotScope = { backend: "docker", persistent: false, profile: "default" };

describe("resolveSlot rules, first match wins", () => {
  it("1: an override with image isolates the task, whatever else applies", () => {
    const tasks = new TaskRegistry();
    tasks.register("bench-1", { override: { image: "python:3" }, parentId: "p" });
    const scope = { ...persistentDocker, sessionKey: "s", sharedKey: "team" };
    expect(resolveSlot("bench-1", scope, tasks)).toBe("bench-1");
  });

  it("1: an override with backend isolates the task too", () => {
    const tasks = new TaskRegistry();
    tasks.register("t", { override: { backend: "docker" } });
    expect(resolveSlot("t", { ...persistentDocker, sessionKey: "s" }, tasks)).toBe("t");
  });

  it("1: an override with only cwd does not isolate", () => {
    const tasks = new TaskRegistry();
    tasks.register("t", { override: { cwd: "/tmp" } });
    expect(resolveSlot("t", { ...persistentDocker, sessionKey: "s" }, tasks)).toBe("default");
  });

  it("1: an empty image does not isolate", () => {
    const tasks = new TaskRegistry();
    tasks.register("t", { override: { image: "" } });
    expect(resolveSlot("t", { ...persistentDocker, sessionKey: "s" }, tasks)).toBe("default");
  });

  it("2: non-persistent Docker with a task id uses the task id", () => {
    expect(resolveSlot("task-9", { ...ephemeralDocker, sessionKey: "s" })).toBe("task-9");
  });

  it("2: sub-tasks share their root parent's container", () => {
    const tasks = new TaskRegistry();
    tasks.register("root");
    tasks.register("child", { parentId: "root" });
    tasks.register("grandchild", { parentId: "child" });
    expect(resolveSlot("grandchild", ephemeralDocker, tasks)).toBe("root");
  });

  it("2: a dangling parent aliases to default", () => {
    const tasks = new TaskRegistry();
    tasks.register("child", { parentId: "gone" });
    expect(resolveSlot("child", ephemeralDocker, tasks)).toBe("default");
  });

  it("2: a parent unregistered later leaves its children dangling", () => {
    const tasks = new TaskRegistry();
    tasks.register("root");
    tasks.register("child", { parentId: "root" });
    tasks.unregister("root");
    expect(resolveSlot("child", ephemeralDocker, tasks)).toBe("default");
  });

  it("2: a cycle terminates deterministically", () => {
    const tasks = new TaskRegistry();
    tasks.register("a", { parentId: "b" });
    tasks.register("b", { parentId: "c" });
    tasks.register("c", { parentId: "a" });
    expect(resolveSlot("a", ephemeralDocker, tasks)).toBe("c");
    expect(resolveSlot("b", ephemeralDocker, tasks)).toBe("a");
  });

  it("2: a task that is its own parent resolves to itself", () => {
    const tasks = new TaskRegistry();
    tasks.register("self", { parentId: "self" });
    expect(resolveSlot("self", ephemeralDocker, tasks)).toBe("self");
  });

  it("2: an unregistered task id is its own root", () => {
    expect(resolveSlot("loose", ephemeralDocker, new TaskRegistry())).toBe("loose");
  });

  it("3: persistent Docker with a shared key uses shared:<trimmed key>, with or without session", () => {
    expect(
      resolveSlot(undefined, { ...persistentDocker, sharedKey: " team ", sessionKey: "s" }),
    ).toBe("shared:team");
    expect(resolveSlot(undefined, { ...persistentDocker, sharedKey: "team" })).toBe("shared:team");
    expect(resolveSlot("t", { ...persistentDocker, profile: "work", sharedKey: "team" })).toBe(
      "shared:team",
    );
  });

  it("3: an empty or blank shared key keeps per-profile isolation", () => {
    const scope = { ...persistentDocker, profile: "work", sessionKey: "s" };
    expect(resolveSlot(undefined, { ...scope, sharedKey: "" })).toBe("profile:work");
    expect(resolveSlot(undefined, { ...scope, sharedKey: "   " })).toBe("profile:work");
  });

  it("3: SSH ignores the shared key", () => {
    const scope = {
      backend: "ssh" as const,
      persistent: true,
      profile: "p",
      sharedKey: "team",
      sessionKey: "s",
    };
    expect(resolveSlot(undefined, scope)).toBe("session:s");
  });

  it("4: no session key gives default", () => {
    expect(resolveSlot(undefined, { ...persistentDocker, profile: "work" })).toBe("default");
    expect(resolveSlot(undefined, { ...ephemeralDocker, sessionKey: "" })).toBe("default");
    expect(resolveSlot(undefined, { backend: "local", persistent: false, profile: "p" })).toBe(
      "default",
    );
  });

  it.each<[BackendKind, boolean]>([
    ["ssh", true],
    ["ssh", false],
    ["local", true],
    ["docker", false],
  ])("5: %s (persistent %s) with a session uses session:<key>", (backend, persistent) => {
    const scope = { backend, persistent, profile: "p", sessionKey: "agent:p:telegram:dm:1" };
    expect(resolveSlot(undefined, scope)).toBe("session:agent:p:telegram:dm:1");
  });

  it("5: SSH with a task id still uses the session (rule 2 is Docker only)", () => {
    expect(
      resolveSlot("t", { backend: "ssh", persistent: false, profile: "p", sessionKey: "s" }),
    ).toBe("session:s");
  });

  it("6: persistent Docker gives default for the default profile, profile:<name> otherwise", () => {
    expect(resolveSlot(undefined, { ...persistentDocker, sessionKey: "s" })).toBe("default");
    expect(resolveSlot("t", { ...persistentDocker, profile: "work", sessionKey: "s" })).toBe(
      "profile:work",
    );
  });
});

describe("resolveSlot properties", () => {
  const scopes = fc.record({
    backend: fc.constantFrom<BackendKind>("docker", "ssh", "local"),
    persistent: fc.boolean(),
    profile: fc.constantFrom("default", "work", "p2"),
    sessionKey: fc.option(fc.string({ maxLength: 20 }), { nil: undefined }),
    sharedKey: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
  });

  it("is deterministic and never empty", () => {
    fc.assert(
      fc.property(
        fc.option(
          fc
            .string({ minLength: 1, maxLength: 8 })
            .filter((id) => parseSlotKey(id).kind === "task"),
          { nil: undefined },
        ),
        scopes,
        (taskId, scope) => {
          const slot = resolveSlot(taskId, scope);
          expect(slot.length).toBeGreaterThan(0);
          expect(resolveSlot(taskId, scope)).toBe(slot);
        },
      ),
    );
  });

  it("two sessions of one persistent Docker profile share its container", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
        const scope = { ...persistentDocker, profile: "work" };
        expect(resolveSlot(undefined, { ...scope, sessionKey: a })).toBe(
          resolveSlot(undefined, { ...scope, sessionKey: b }),
        );
      }),
    );
  });

  it("distinct sessions never share a non-persistent slot", () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1 }), fc.string({ minLength: 1 }), (a, b) => {
        fc.pre(a !== b);
        const scope = { backend: "ssh" as const, persistent: false, profile: "p" };
        expect(resolveSlot(undefined, { ...scope, sessionKey: a })).not.toBe(
          resolveSlot(undefined, { ...scope, sessionKey: b }),
        );
      }),
    );
  });

  it("alias chains of any shape terminate", () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 9 }))),
        (edges) => {
          const tasks = new TaskRegistry();
          for (const [child, parent] of edges)
            tasks.register(`t${child}`, { parentId: `t${parent}` });
          for (let i = 0; i < 10; i++)
            expect(typeof resolveSlot(`t${i}`, ephemeralDocker, tasks)).toBe("string");
        },
      ),
    );
  });
});
