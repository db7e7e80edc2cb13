import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { refusedRequest } from "../../test/fixtures/discord-errors.js";
import { createLogger } from "../log.js";
import { describeError } from "./discord/errors.js";
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

  it("logs a platform error as its describe summarises it: no request body, no URL", async () => {
    const lines: string[] = [];
    const log = createLogger({ destination: { write: (l) => lines.push(l) } });
    const client = new EventEmitter();
    const listeners = {
      thrown: () => {
        throw refusedRequest("private words");
      },
      rejected: async () => {
        throw refusedRequest("private words");
      },
    };
    client.on("thrown", guardedListener(log, "thrown", listeners.thrown, describeError));
    client.on("rejected", guardedListener(log, "rejected", listeners.rejected, describeError));
    client.on("default", guardedListener(log, "default", listeners.thrown));
    for (const event of ["thrown", "default", "rejected"]) client.emit(event);
    await new Promise((resolve) => setImmediate(resolve));

    expect(lines).toHaveLength(3);
    for (const line of lines) {
      expect(line).not.toContain("private words");
      expect(line).not.toContain("interaction-token-xyz");
    }
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toMatchObject([
      { step: "thrown", err: { status: 400, code: 50035, message: "Invalid Form Body" } },
      {
        step: "default",
        err: { type: "DiscordAPIError", status: 400, code: 50035, method: "POST" },
      },
      { step: "rejected", err: { status: 400, code: 50035 } },
    ]);
  });
});
