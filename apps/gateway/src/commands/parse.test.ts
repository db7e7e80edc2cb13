import { describe, expect, it } from "vitest";
import { parseCommand } from "./parse.js";

describe("parseCommand", () => {
  it.each([
    ["/stop", { name: "stop" }],
    ["  /STOP  ", { name: "stop" }],
    ["/stop@mediagate_bot", { name: "stop" }],
    ["/reset", { name: "reset", confirm: false }],
    ["/reset confirm", { name: "reset", confirm: true }],
    ["/reset@bot CONFIRM", { name: "reset", confirm: true }],
    ["/status", { name: "status" }],
  ])("recognizes %j", (text, expected) => {
    expect(parseCommand(text)).toEqual(expected);
  });

  it.each([
    "/start",
    "stop",
    "/stopper",
    "/stop now",
    "/reset everything",
    "echo /stop",
    "/status x",
  ])("leaves %j to the agent", (text) => {
    expect(parseCommand(text)).toBeUndefined();
  });
});
