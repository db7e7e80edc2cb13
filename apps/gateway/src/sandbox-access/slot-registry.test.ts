import { describe, expect, it } from "vitest";
import { SlotRegistry } from "./slot-registry.js";

describe("SlotRegistry", () => {
  it("keeps the most recently noted sessions of a slot, past its bound", () => {
    const slots = new SlotRegistry({ keptPerSlot: 3 });
    for (const key of ["a", "b", "c", "d"]) slots.note("p/default", key);
    expect(slots.sessions("p/default")).toEqual(["b", "c", "d"]);
    // Noted again, b is the most recent: c is the oldest when e comes.
    slots.note("p/default", "b");
    slots.note("p/default", "e");
    expect(slots.sessions("p/default").sort()).toEqual(["b", "d", "e"]);
    expect(slots.count("p/default", "z")).toBe(4);
    // Each slot has its own bound.
    slots.note("p/session:x", "x");
    expect(slots.sessions("p/session:x")).toEqual(["x"]);
  });

  it("never forgets a busy session to make room: /stop all must still reach it", () => {
    const busy = new Set(["a"]);
    const slots = new SlotRegistry({ keptPerSlot: 2, busy: (key) => busy.has(key) });
    for (const key of ["a", "b", "c", "d"]) slots.note("p/default", key);
    expect(slots.sessions("p/default")).toEqual(["a", "d"]);
    // With every other session busy, the slot holds one more than its bound rather than drop one.
    busy.add("d");
    slots.note("p/default", "e");
    expect(slots.sessions("p/default")).toEqual(["a", "d", "e"]);
    // forget() keeps the busy ones by the registry's own rule.
    slots.forget("p/default");
    expect(slots.sessions("p/default")).toEqual(["a", "d"]);
  });
});
