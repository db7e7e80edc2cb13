import { describe, expect, it } from "vitest";
import { pollFor, waitFor, waitUntil } from "./wait.js";

/** A value that appears on the `after`-th look, counting the looks. */
function appearing<T>(value: T, after: number) {
  let looks = 0;
  return {
    look: () => (++looks >= after ? value : undefined),
    get looks() {
      return looks;
    },
  };
}

describe("the polling helpers", () => {
  it("waitUntil returns once the check holds and names what never happened", async () => {
    const ready = appearing(true, 3);
    await waitUntil(() => ready.look() === true, "ready");
    expect(ready.looks).toBe(3);
    await expect(waitUntil(() => false, "the impossible", 50)).rejects.toThrow(
      "waitUntil: the impossible did not happen within 50 ms",
    );
    await expect(
      waitUntil(() => {
        throw new Error("broken check");
      }, "x"),
    ).rejects.toThrow("broken check");
  });

  it("waitFor retries an assertion until it passes and answers its value", async () => {
    const seen: number[] = [];
    const value = await waitFor(() => {
      seen.push(seen.length);
      expect(seen).toHaveLength(4);
      return "passed";
    });
    expect(value).toBe("passed");
    expect(seen).toEqual([0, 1, 2, 3]);
  });

  it("waitFor rejects with the assertion's last error once the bound passes", async () => {
    let tries = 0;
    const error = await waitFor(() => expect(++tries).toBe(0), 50).catch((e: unknown) => e);
    expect(error).toMatchObject({ name: "AssertionError", actual: tries, expected: 0 });
    expect(tries).toBeGreaterThan(1);
  });

  it("pollFor answers the first value that is not undefined, falsy ones too", async () => {
    const zero = appearing(0, 2);
    expect(await pollFor(zero.look)).toBe(0);
    expect(zero.looks).toBe(2);
  });

  it("pollFor answers undefined when nothing came, and rethrows what the check throws", async () => {
    expect(await pollFor(() => undefined, 50)).toBeUndefined();
    await expect(
      pollFor(() => {
        throw new Error("dockerd exited");
      }),
    ).rejects.toThrow("dockerd exited");
  });
});
