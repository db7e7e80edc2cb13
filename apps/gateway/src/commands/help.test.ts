import { describe, expect, it } from "vitest";
import type { AgentSettings } from "../config/types.js";
import {
  AdminCommandHelp,
  ApprovalCommandHelp,
  ApproveCommandHelp,
  ConversationCommandHelp,
  describeHelp,
  type HelpContext,
  TaskCommandHelp,
} from "./help.js";

const shell: AgentSettings = { kind: "shell" };
const openai: AgentSettings = {
  kind: "openai",
  models: [{ name: "gpt-test", baseUrl: "http://127.0.0.1:1/v1", model: "gpt-test" }],
  defaultModel: "gpt-test",
  fallback: [],
  maxToolRounds: 8,
};

const base: HelpContext = {
  profile: "work",
  agent: shell,
  platform: "telegram",
  chatType: "dm",
  admin: false,
  maxFileBytes: 20_000_000,
  botName: "@work_bot",
};

describe("describeHelp", () => {
  it("tells an allowed user what the bot is, what a message does, how to send files, and only /help", () => {
    const text = describeHelp(base);
    expect(text).toContain('profile "work" (shell agent)');
    expect(text).toContain("run as a shell command in this chat's sandbox");
    expect(text).toContain("/workspace/inbox/");
    expect(text).toContain("$MEDIAGATE_ATTACHMENTS");
    expect(text).toMatch(/up to 20(\.0)? MB/);
    expect(text).toContain("/help — this text");
    for (const command of ["/status", "/stop", "/reset"]) expect(text).not.toContain(command);
  });

  it("lists /new and /compact for everyone when the openai agent answers", () => {
    const text = describeHelp({ ...base, agent: openai });
    for (const line of ConversationCommandHelp) expect(text).toContain(line);
    expect(describeHelp(base)).not.toContain("/compact");
  });

  it("lists the task commands for every allowed user, on every agent", () => {
    for (const context of [base, { ...base, agent: openai }, { ...base, admin: true }]) {
      const text = describeHelp(context);
      for (const line of TaskCommandHelp) expect(text).toContain(line);
    }
    expect(describeHelp(base)).toContain('/cron "<min hour day month weekday>" <prompt>');
  });

  it("lists the admin commands for an admin", () => {
    const text = describeHelp({ ...base, admin: true });
    for (const line of AdminCommandHelp) expect(text).toContain(line);
    expect(text).toContain("Commands (you are an admin):");
    expect(text).not.toContain("/approve");
  });

  it("lists /approve for an admin of a pairing profile, never for a user", () => {
    expect(describeHelp({ ...base, admin: true, pairing: true })).toContain(ApproveCommandHelp);
    expect(describeHelp({ ...base, admin: false, pairing: true })).not.toContain("/approve");
  });

  it("lists /allow and /deny where approvals ask: for everyone with approvers sender, admins only with admins", () => {
    const asking = (approvers: "sender" | "admins"): AgentSettings => ({
      kind: "shell",
      approvals: { ask: "always", approvers, expiresSeconds: 600 },
    });
    const user = describeHelp({ ...base, agent: asking("sender") });
    for (const line of ApprovalCommandHelp) expect(user).toContain(line);
    expect(describeHelp({ ...base, agent: asking("admins") })).not.toContain("/allow");
    const admin = describeHelp({ ...base, agent: asking("admins"), admin: true });
    for (const line of ApprovalCommandHelp) expect(admin).toContain(line);
    const never: AgentSettings = {
      kind: "shell",
      approvals: { ask: "never", approvers: "sender", expiresSeconds: 600 },
    };
    expect(describeHelp({ ...base, agent: never, admin: true })).not.toContain("/allow");
    expect(describeHelp({ ...base, admin: true })).not.toContain("/deny");
  });

  it("says that the openai agent's model runs the commands", () => {
    const text = describeHelp({ ...base, agent: openai });
    expect(text).toContain('profile "work" (openai agent)');
    expect(text).toContain("/model — this session's model");
    expect(text).toContain("/usage — tokens and cost");
    expect(describeHelp(base)).not.toContain("/model");
    expect(describeHelp(base)).not.toContain("/usage");
    expect(text).toContain("goes to the model (gpt-test), which can run commands");
    expect(text).not.toContain("$MEDIAGATE_ATTACHMENTS");
  });

  it.each([
    ["telegram", "send a photo, document, voice note"],
    ["discord", "attach them to a message"],
    ["console", "/attach <path> [text]"],
  ] as const)("tells how files are sent on %s", (platform, how) => {
    expect(describeHelp({ ...base, platform })).toContain(how);
  });

  it("tells how to address the bot in a group, and not in a DM", () => {
    expect(describeHelp({ ...base, chatType: "group" })).toContain(
      "mention @work_bot, reply to one of my messages, or add my name to a command (/help@work_bot)",
    );
    expect(
      describeHelp({ ...base, platform: "discord", chatType: "group", botName: "<@42>" }),
    ).toContain("when mentioned (<@42>)");
    expect(describeHelp(base)).not.toContain("In a group");
  });
});
