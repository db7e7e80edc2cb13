import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { createLogger } from "../log.js";
import { guardedListener } from "./listener-boundary.js";

describe("guardedListener", () => {
  it("logs what a listener throws or rejects with, by step, and lets nothing reach the emitter", async () => {
    const lines: string[] = [];
    const log = createLogger({ destination: { write: (l) => lines.push(l) } });
    const client = new EventEmitter();
    client.on(
      "messageCreate",
      guardedListener(log, "messageCreate", (text: string) => {
        throw new Error(`cannot read ${text}`);
      }),
    );
    client.on(
      "interactionCreate",
      guardedListener(log, "interactionCreate", async () => {
        throw new Error("option is of type 3; expected 5");
      }),
    );
    expect(() => client.emit("messageCreate", "x")).not.toThrow();
    client.emit("interactionCreate");
    // The rejection is caught in a microtask, before the next macrotask.
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { level: 50, step: "messageCreate", msg: 'channel listener "messageCreate" failed' },
      { level: 50, step: "interactionCreate", err: { message: "option is of type 3; expected 5" } },
    ]);
  });
});
