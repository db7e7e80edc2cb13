import { describe, expect, it } from "vitest";
import { parseCommand } from "./parse.js";

describe("parseCommand", () => {
  it.each([
    ["/stop", { name: "stop", all: false }],
    ["  /STOP  ", { name: "stop", all: false }],
    ["/stop@mediagate_bot", { name: "stop", all: false }],
    ["/stop all", { name: "stop", all: true }],
    ["/stop@mediagate_bot ALL", { name: "stop", all: true }],
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
    "/stop all now",
    "/stopall",
    "/reset everything",
    "echo /stop",
    "/status x",
  ])("leaves %j to the agent", (text) => {
    expect(parseCommand(text)).toBeUndefined();
  });
});
