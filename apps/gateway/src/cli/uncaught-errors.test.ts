import { EventEmitter } from "node:events";
import { describe, expect, it } from "vitest";
import { refusedRequest } from "../../test/fixtures/discord-errors.js";
import { createLogger } from "../log.js";
import { PipelineStepError } from "../pipeline/step-error.js";
import { onUncaughtErrors, stepOf } from "./uncaught-errors.js";

function harness() {
  const source = new EventEmitter();
  const lines: string[] = [];
  const logger = createLogger({ level: "info", destination: { write: (l) => lines.push(l) } });
  const fatal: Error[] = [];
  const exits: number[] = [];
  const dispose = onUncaughtErrors({
    logger,
    source,
    onFatal: (error) => fatal.push(error),
    exit: (code) => exits.push(code),
  });
  const entries = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { source, entries, fatal, exits, dispose };
}

describe("onUncaughtErrors", () => {
  it("logs an unhandled rejection with its step and the cause, and keeps the gateway running", () => {
    const h = harness();
    const failure = new PipelineStepError("sendReply", new Error("socket hang up"));
    h.source.emit("unhandledRejection", failure, Promise.resolve());
    h.source.emit("unhandledRejection", "a bare string", Promise.resolve());
    expect(h.entries()).toMatchObject([
      {
        level: 50,
        step: "sendReply",
        msg: "unhandled promise rejection; the gateway keeps running",
        err: { type: "PipelineStepError" },
      },
      { level: 50, step: "unknown", err: "a bare string" },
    ]);
    expect(JSON.stringify(h.entries()[0])).toContain("socket hang up");
    expect(h.fatal).toEqual([]);
    expect(h.exits).toEqual([]);
  });

  it("stops the gateway on an uncaught exception, and exits at once on a second one", () => {
    const h = harness();
    const first = Object.assign(new Error("state broken"), { step: "interactionCreate" });
    h.source.emit("uncaughtException", first, "uncaughtException");
    expect(h.fatal).toEqual([first]);
    expect(h.exits).toEqual([]);
    h.source.emit("uncaughtException", new Error("again"), "uncaughtException");
    expect(h.fatal).toEqual([first]);
    expect(h.exits).toEqual([1]);
    expect(h.entries()).toMatchObject([
      {
        level: 60,
        step: "interactionCreate",
        msg: "uncaught exception; the gateway stops (its state cannot be trusted)",
      },
      { level: 60, step: "unknown", msg: "uncaught exception while stopping; exiting at once" },
    ]);
  });

  it("logs a platform error without its request body or URL, rejected or thrown", () => {
    const h = harness();
    const failure = new PipelineStepError("sendReply", refusedRequest("private words"));
    h.source.emit("unhandledRejection", failure, Promise.resolve());
    h.source.emit("uncaughtException", refusedRequest("private words"), "uncaughtException");
    expect(h.entries()).toMatchObject([
      { level: 50, step: "sendReply", err: { type: "PipelineStepError" } },
      { level: 60, err: { type: "DiscordAPIError", status: 400, code: 50035 } },
    ]);
    const logged = JSON.stringify(h.entries());
    expect(logged).toContain("Invalid Form Body");
    expect(logged).not.toContain("private words");
    expect(logged).not.toContain("interaction-token-xyz");
  });

  it("stops listening once disposed", () => {
    const h = harness();
    h.dispose();
    expect(h.source.listenerCount("unhandledRejection")).toBe(0);
    expect(h.source.listenerCount("uncaughtException")).toBe(0);
  });

  it("finds the step along the cause chain", () => {
    const inner = new PipelineStepError("runTurn", new Error("x"));
    expect(stepOf(new Error("outer", { cause: inner }))).toBe("runTurn");
    expect(stepOf(undefined)).toBe("unknown");
  });
});
