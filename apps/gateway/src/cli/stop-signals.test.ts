import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { onStopSignals, type SignalSource, type StopSignal } from "./stop-signals.js";

function harness() {
  const source = new EventEmitter() as EventEmitter & SignalSource;
  let clockMs = 0;
  const stops: StopSignal[] = [];
  const exits: number[] = [];
  const dispose = onStopSignals({
    source,
    now: () => clockMs,
    exit: (code) => exits.push(code),
    onStop: (signal) => stops.push(signal),
  });
  return {
    stops,
    exits,
    dispose,
    send(signal: StopSignal, atMs: number) {
      clockMs = atMs;
      source.emit(signal, signal);
    },
    source,
  };
}

describe("onStopSignals", () => {
  it("starts one graceful stop for a Ctrl-C that arrives twice (terminal group and pnpm's forward)", () => {
    const h = harness();
    h.send("SIGINT", 0);
    h.send("SIGINT", 4);
    expect(h.stops).toEqual(["SIGINT"]);
    expect(h.exits).toEqual([]);
  });

  it("exits at once with 130 on a second Ctrl-C after the repeat window", () => {
    const h = harness();
    h.send("SIGINT", 0);
    h.send("SIGINT", 1000);
    expect(h.stops).toEqual(["SIGINT"]);
    expect(h.exits).toEqual([130]);
  });

  it("exits with 143 on a SIGTERM after a SIGINT began the stop", () => {
    const h = harness();
    h.send("SIGINT", 0);
    h.send("SIGTERM", 5000);
    expect(h.exits).toEqual([143]);
  });

  it("stops listening once disposed", () => {
    const h = harness();
    h.dispose();
    h.send("SIGTERM", 0);
    expect(h.stops).toEqual([]);
    expect(h.source.listenerCount("SIGINT") + h.source.listenerCount("SIGTERM")).toBe(0);
  });
});
