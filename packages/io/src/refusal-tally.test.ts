import { describe, expect, it } from "vitest";
import { type RefusalPeriod, RefusalTally } from "./refusal-tally.js";

describe("RefusalTally", () => {
  it("writes one summary per period, with the addresses bounded and the most refused first", () => {
    let now = 1_000;
    const timers: (() => void)[] = [];
    const written: RefusalPeriod<"a" | "b">[] = [];
    const tally = new RefusalTally<"a" | "b">({
      kinds: ["a", "b"],
      write: (period) => written.push(period),
      intervalMs: 60_000,
      maxAddresses: 2,
      topAddresses: 1,
      now: () => now,
      schedule: (run) => {
        timers.push(run);
        return () => {};
      },
    });
    tally.flush();
    expect(written).toEqual([]);
    for (const address of ["x", "y", "y", "z"]) tally.count("a", address);
    tally.count("b", "y");
    // One timer for the period, armed by its first refusal.
    expect(timers).toHaveLength(1);
    now = 31_000;
    timers[0]!();
    expect(written).toEqual([
      {
        counts: { a: 4, b: 1 },
        total: 5,
        addresses: 2,
        more: true,
        from: "more than 2 addresses",
        top: [{ address: "y", refused: 3 }],
        seconds: 30,
      },
    ]);
    tally.count("b", "x");
    tally.flush();
    expect(written.at(-1)).toMatchObject({ total: 1, from: "1 address", seconds: 1 });
    expect(timers).toHaveLength(2);
  });
});
