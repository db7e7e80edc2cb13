import { describe, expect, it } from "vitest";
import {
  ApproveMenuCommand,
  commandText,
  MenuCommands,
  menuCommandNamed,
  menuFor,
} from "./menu.js";
import { parseCommand } from "./parse.js";

describe("command menus", () => {
  it("offers /help, /new and /compact to everyone and the admin commands to admins only", () => {
    expect(menuFor(false).map((command) => command.name)).toEqual(["help", "new", "compact"]);
    expect(menuFor(true).map((command) => command.name)).toEqual([
      "help",
      "new",
      "compact",
      "status",
      "stop",
      "reset",
    ]);
  });

  it("lists /approve for the admins of a pairing profile only, after the others", () => {
    expect(menuFor(false, true).map((command) => command.name)).toEqual(["help", "new", "compact"]);
    expect(menuFor(true, true).map((command) => command.name)).toEqual([
      "help",
      "new",
      "compact",
      "status",
      "stop",
      "reset",
      "approve",
    ]);
    expect(parseCommand("/approve ABCD-EFGH")).toMatchObject({ name: "approve" });
  });

  it("fits both platforms' rules: lowercase names, descriptions of 1 to 100 characters", () => {
    for (const command of [...MenuCommands, ApproveMenuCommand]) {
      expect(command.name).toMatch(/^[a-z0-9_]{1,32}$/);
      expect(command.description.length).toBeGreaterThan(0);
      expect(command.description.length).toBeLessThanOrEqual(100);
      for (const option of command.options ?? []) {
        expect(option.name).toMatch(/^[a-z0-9_]{1,32}$/);
        expect(option.description.length).toBeLessThanOrEqual(100);
      }
    }
  });

  it.each([
    ["stop", [], "/stop", { name: "stop", all: false }],
    ["stop", ["all"], "/stop all", { name: "stop", all: true }],
    ["reset", [], "/reset", { name: "reset", confirm: false }],
    ["reset", ["confirm"], "/reset confirm", { name: "reset", confirm: true }],
    ["status", [], "/status", { name: "status" }],
    ["help", [], "/help", { name: "help", start: false }],
    ["new", [], "/new", { name: "new" }],
    ["compact", [], "/compact", { name: "compact" }],
  ])("turns a pick of /%s %j into the text command %j", (name, options, text, parsed) => {
    const command = menuCommandNamed(name);
    expect(command?.name).toBe(name);
    const chosen = commandText(command!, (option) => (options as string[]).includes(option));
    expect(chosen).toBe(text);
    expect(parseCommand(chosen)).toEqual(parsed);
  });

  it("knows no other command", () => {
    expect(menuCommandNamed("start")).toBeUndefined();
    expect(menuCommandNamed("rm")).toBeUndefined();
  });
});
