import { describe, expect, it } from "vitest";
import { CallOrder } from "./call-order.js";

/** A promise settled from outside, to hold a call in flight. */
function gate(): { promise: Promise<void>; open: () => void; fail: () => void } {
  let open = () => {};
  let fail = () => {};
  const promise = new Promise<void>((resolve, reject) => {
    open = resolve;
    fail = () => reject(new Error("failed"));
  });
  return { promise, open, fail };
}

describe("CallOrder", () => {
  it("runs calls on one key in order and calls on other keys beside them", async () => {
    const order = new CallOrder();
    const ran: string[] = [];
    const first = gate();
    const a1 = order.run(["a"], async () => {
      await first.promise;
      ran.push("a1");
    });
    const a2 = order.run(["a"], async () => {
      ran.push("a2");
    });
    await order.run(["b"], async () => {
      ran.push("b");
    });
    expect(ran).toEqual(["b"]);
    first.open();
    await Promise.all([a1, a2]);
    expect(ran).toEqual(["b", "a1", "a2"]);
  });

  it("holds a call of several keys behind each, and goes on after a failure", async () => {
    const order = new CallOrder();
    const ran: string[] = [];
    const a = gate();
    const failing = order.run(["a"], () => a.promise);
    const both = order.run(["a", "b"], async () => {
      ran.push("a+b");
    });
    const b = order.run(["b"], async () => {
      ran.push("b");
    });
    a.fail();
    await expect(failing).rejects.toThrow("failed");
    await Promise.all([both, b]);
    expect(ran).toEqual(["a+b", "b"]);
  });

  it("runs an `all` call after every earlier call and before every later one", async () => {
    const order = new CallOrder();
    const ran: string[] = [];
    const held = gate();
    const early = order.run(["x"], async () => {
      await held.promise;
      ran.push("early");
    });
    const all = order.run("all", async () => {
      ran.push("all");
    });
    const late = order.run(["y"], async () => {
      ran.push("late");
    });
    held.open();
    await Promise.all([early, all, late]);
    expect(ran).toEqual(["early", "all", "late"]);
  });
});
