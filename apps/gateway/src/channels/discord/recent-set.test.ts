import { describe, expect, it } from "vitest";
import { RecentSet } from "./recent-set.js";

describe("RecentSet", () => {
  it("keeps the most recently added values up to its size, dropping the least recent", () => {
    const set = new RecentSet<string>(3);
    for (const id of ["a", "b", "c", "d"]) set.add(id);
    expect(["a", "b", "c", "d"].filter((id) => set.has(id))).toEqual(["b", "c", "d"]);
    expect(set.size).toBe(3);
  });

  it("makes a value added again the most recent", () => {
    const set = new RecentSet<string>(2);
    set.add("a");
    set.add("b");
    set.add("a");
    set.add("c");
    expect([set.has("a"), set.has("b"), set.has("c")]).toEqual([true, false, true]);
  });

  it("refuses a size that holds nothing", () => {
    expect(() => new RecentSet(0)).toThrow(/positive integer/);
  });
});
