import { describe, expect, it } from "vitest";
import { commandLogFields, parseCommand } from "./parse.js";

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
    ["/help", { name: "help", start: false }],
    ["/HELP@mediagate_bot", { name: "help", start: false }],
    ["/help me please", { name: "help", start: false }],
    ["/start", { name: "help", start: true }],
    ["/start@mediagate_bot", { name: "help", start: true }],
    ["/start deep-link-payload", { name: "help", start: true }],
    ["/approve", { name: "approve" }],
    ["/approve ABCD-EFGH", { name: "approve", code: "ABCD-EFGH" }],
    ["/APPROVE@mediagate_bot  abcd efgh ", { name: "approve", code: "abcd efgh" }],
    ["/model", { name: "model" }],
    ["/model@mediagate_bot claude-sonnet", { name: "model", choice: "claude-sonnet" }],
    ["/MODEL  Main ", { name: "model", choice: "Main" }],
    ["/usage", { name: "usage" }],
    ["/usage@mediagate_bot", { name: "usage" }],
    ["/new", { name: "new" }],
    ["/NEW@mediagate_bot", { name: "new" }],
    ["/compact", { name: "compact" }],
    ["/compact@bot  the build steps ", { name: "compact", focus: "the build steps" }],
    ["/compact keep\nboth lines", { name: "compact", focus: "keep\nboth lines" }],
  ])("recognizes %j", (text, expected) => {
    expect(parseCommand(text)).toEqual(expected);
  });

  it.each([
    "/starter",
    "/helpme",
    "echo /help",
    "stop",
    "/stopper",
    "/stop now",
    "/stop all now",
    "/stopall",
    "/reset everything",
    "echo /stop",
    "/status x",
    "/approver",
    "echo /approve X",
    "/model a b",
    "/models",
    "/usage today",
    "/new chat please",
    "/newer",
    "/compacted",
  ])("leaves %j to the agent", (text) => {
    expect(parseCommand(text)).toBeUndefined();
  });
});

describe("commandLogFields", () => {
  it("logs the head of a long /model choice and its length, whole, with controls escaped", () => {
    const typed = `x\u202e${"😀".repeat(2_000)}`;
    const command = parseCommand(`/model ${typed}`);
    expect(command).toEqual({ name: "model", choice: typed });
    const fields = commandLogFields(command!);
    const choice = String(fields.choice);
    expect(choice.startsWith("x\\u202e😀")).toBe(true);
    expect(choice.length).toBeLessThanOrEqual(70);
    expect(choice).not.toMatch(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])/);
    expect(fields.choiceChars).toBe(typed.length);
  });

  it("logs a short /model choice as typed", () => {
    expect(commandLogFields({ name: "model", choice: "main" })).toEqual({
      name: "model",
      choice: "main",
    });
  });
});
