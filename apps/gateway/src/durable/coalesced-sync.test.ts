import { describe, expect, it } from "vitest";
import { coalescedSync } from "./coalesced-sync.js";

/** A sync the test ends by hand, counting how many were started. */
function manualSync() {
  const pending: { resolve: () => void; reject: (error: Error) => void }[] = [];
  const sync = () =>
    new Promise<void>((resolve, reject) => {
      pending.push({ resolve, reject });
    });
  return { sync, pending };
}

const flushed = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("coalescedSync", () => {
  it("starts one sync at once, and one more for every caller that came while it ran", async () => {
    const { sync, pending } = manualSync();
    const shared = coalescedSync(sync);
    const settled: string[] = [];
    const first = shared().then(() => settled.push("first"));
    const during = [1, 2, 3].map((i) => shared().then(() => settled.push(`during ${i}`)));
    expect(pending).toHaveLength(1);
    pending[0]?.resolve();
    await first;
    await flushed();
    // The callers that came during the first sync wait for a second one, started after it.
    expect(settled).toEqual(["first"]);
    expect(pending).toHaveLength(2);
    pending[1]?.resolve();
    await Promise.all(during);
    expect(settled).toEqual(["first", "during 1", "during 2", "during 3"]);
    // Nothing runs now: the next caller starts a sync at once.
    void shared();
    expect(pending).toHaveLength(3);
    pending[2]?.resolve();
  });

  it("rejects the callers of a failed sync, and the next callers get a sync of their own", async () => {
    const { sync, pending } = manualSync();
    const shared = coalescedSync(sync);
    const failing = shared();
    const waiting = shared();
    pending[0]?.reject(new Error("disk gone"));
    await expect(failing).rejects.toThrow("disk gone");
    await flushed();
    expect(pending).toHaveLength(2);
    pending[1]?.resolve();
    await expect(waiting).resolves.toBeUndefined();
  });
});
