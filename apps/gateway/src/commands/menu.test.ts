import { describe, expect, it } from "vitest";
import { parseTaskCommand, TaskCommandNames } from "../schedules/parse.js";
import { commandText, MenuCommands, type MenuOffer, menuCommandNamed, menuFor } from "./menu.js";
import { parseCommand } from "./parse.js";

const shell: MenuOffer = { agent: "shell", approvers: undefined, pairing: false };
const openai: MenuOffer = { ...shell, agent: "openai" };
const taskNames: readonly string[] = TaskCommandNames;
const all = (admin: boolean, offer: MenuOffer) => menuFor(admin, offer).map((c) => c.name);
/** The menu but the task commands (offered alike everywhere; tested on their own). */
const names = (admin: boolean, offer: MenuOffer) =>
  all(admin, offer).filter((name) => !taskNames.includes(name));

describe("command menus", () => {
  it("offers a shell profile's users /help, and its admins /status, /stop and /reset too", () => {
    expect(names(false, shell)).toEqual(["help"]);
    expect(names(true, shell)).toEqual(["help", "status", "stop", "reset"]);
  });

  it("offers the openai agent's /new, /compact, /model and /usage to everyone", () => {
    expect(names(false, openai)).toEqual(["help", "new", "compact", "model", "usage"]);
    expect(names(true, openai)).toEqual([
      "help",
      "new",
      "compact",
      "model",
      "usage",
      "status",
      "stop",
      "reset",
    ]);
  });

  it("offers /allow and /deny where approvals ask: to everyone, or to admins only", () => {
    expect(names(false, { ...shell, approvers: "sender" })).toEqual(["help", "allow", "deny"]);
    expect(names(false, { ...shell, approvers: "admins" })).toEqual(["help"]);
    expect(names(true, { ...shell, approvers: "admins" })).toEqual([
      "help",
      "allow",
      "deny",
      "status",
      "stop",
      "reset",
    ]);
  });

  it("lists /approve for the admins of a pairing profile only, after the others", () => {
    expect(names(false, { ...shell, pairing: true })).toEqual(["help"]);
    expect(names(true, { ...shell, pairing: true }).at(-1)).toBe("approve");
    expect(parseCommand("/approve ABCD-EFGH")).toMatchObject({ name: "approve" });
  });

  it("lists every command the gateway parses, the task commands too, but /start (Telegram's own button)", () => {
    for (const command of MenuCommands) {
      if (taskNames.includes(command.name)) {
        expect(parseTaskCommand(`/${command.name}`), command.name).toBeDefined();
        expect(parseCommand(`/${command.name}`), command.name).toBeUndefined();
      } else expect(parseCommand(`/${command.name}`)?.name).toBe(command.name);
    }
    expect(MenuCommands.map((command) => command.name).sort()).toEqual(
      [
        "allow",
        "approve",
        "compact",
        "deny",
        "help",
        "model",
        "new",
        "reset",
        "status",
        "stop",
        "usage",
        ...TaskCommandNames,
      ].sort(),
    );
  });

  it("offers the task commands to every allowed user, after theirs and before the admins'", () => {
    expect(all(false, shell)).toEqual(["help", ...TaskCommandNames]);
    expect(all(true, shell)).toEqual(["help", ...TaskCommandNames, "status", "stop", "reset"]);
    expect(all(false, { ...shell, agent: "openai", approvers: "sender" }).slice(-7)).toEqual([
      "allow",
      "deny",
      ...TaskCommandNames,
    ]);
  });

  it.each([
    [
      "every",
      { interval: "1h", prompt: "df -h /workspace" },
      "/every 1h df -h /workspace",
      { name: "every", interval: "1h", text: "df -h /workspace" },
    ],
    [
      "at",
      { time: "2026-12-24 09:00", prompt: "remind me\nof the call" },
      "/at 2026-12-24 09:00 remind me of the call",
      { name: "at", time: "2026-12-24 09:00", text: "remind me of the call" },
    ],
    [
      "cron",
      { pattern: " 0 9  * * 1-5 ", prompt: "daily report" },
      '/cron "0 9 * * 1-5" daily report',
      { name: "cron", pattern: "0 9 * * 1-5", text: "daily report" },
    ],
    ["tasks", {}, "/tasks", { name: "tasks" }],
    ["tz", {}, "/tz", { name: "tz", zone: undefined }],
    ["tz", { zone: "Europe/Berlin" }, "/tz Europe/Berlin", { name: "tz", zone: "Europe/Berlin" }],
    [
      "tasks",
      { action: "pause", id: "Xk3f9a_Q" },
      "/tasks pause Xk3f9a_Q",
      { name: "task_action", action: "pause", id: "Xk3f9a_Q" },
    ],
  ])("turns a pick of /%s with %j into the task command %j", (name, values, text, parsed) => {
    const command = menuCommandNamed(name)!;
    const chosen = commandText(command, (option) => (values as Record<string, string>)[option]);
    expect(chosen).toBe(text);
    expect(parseTaskCommand(chosen)).toEqual(parsed);
  });

  it("lists a slash command's required options before its optional ones (Discord's rule)", () => {
    for (const command of MenuCommands) {
      const required = (command.options ?? []).map((option) => option.required === true);
      expect(required, command.name).toEqual([...required].sort((a, b) => Number(b) - Number(a)));
    }
  });

  it("fits both platforms' rules: lowercase names, descriptions of 1 to 100 characters", () => {
    for (const command of MenuCommands) {
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
    ["allow", [], "/allow", { name: "allow", session: false }],
    ["allow", ["session"], "/allow session", { name: "allow", session: true }],
    ["deny", [], "/deny", { name: "deny" }],
    ["model", [], "/model", { name: "model" }],
    ["usage", [], "/usage", { name: "usage" }],
  ])("turns a pick of /%s %j into the text command %j", (name, options, text, parsed) => {
    const command = menuCommandNamed(name);
    expect(command?.name).toBe(name);
    const chosen = commandText(command!, (option) => (options as string[]).includes(option));
    expect(chosen).toBe(text);
    expect(parseCommand(chosen)).toEqual(parsed);
  });

  it("appends a text option's words on one line: /compact's focus, /approve's code", () => {
    const compact = menuCommandNamed("compact")!;
    const focused = commandText(compact, () => "  the API\nand its   tests ");
    expect(focused).toBe("/compact the API and its tests");
    expect(parseCommand(focused)).toEqual({ name: "compact", focus: "the API and its tests" });
    expect(commandText(compact, () => "   ")).toBe("/compact");
    const approve = commandText(menuCommandNamed("approve")!, () => "ABCD-EFGH");
    expect(parseCommand(approve)).toEqual({ name: "approve", code: "ABCD-EFGH" });
  });

  it("knows no other command", () => {
    expect(menuCommandNamed("start")).toBeUndefined();
    expect(menuCommandNamed("rm")).toBeUndefined();
  });
});
