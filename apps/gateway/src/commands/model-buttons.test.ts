import { describe, expect, it } from "vitest";
import type { ModelAgentSettings } from "../agents/models.js";
import type { ChannelAdapter, ChoicePress, InboundMessage } from "../channels/types.js";
import { parseChoiceData } from "../choices/choice-data.js";
import type { ProfileConfig } from "../config/types.js";
import { silentLogger } from "../log.js";
import type { PipelineRuntime } from "../pipeline/types.js";
import { buildSessionKey } from "../session/key.js";
import {
  ModelChoiceKind,
  ModelPickers,
  modelButtonRows,
  modelChoiceData,
  modelChoiceIndex,
} from "./model-buttons.js";

const LongName = `m${"x".repeat(63)}`;

const agent: ModelAgentSettings = {
  kind: "openai",
  models: [
    { name: "main", baseUrl: "http://h/v1", model: "main-x" },
    { name: LongName, baseUrl: "http://h/v1", model: "long-x" },
    { name: "big", baseUrl: "http://h/v1", model: "big-x" },
  ],
  defaultModel: "main",
  fallback: [],
  memberModels: ["main", LongName],
  maxToolRounds: 8,
};

describe("model choice data", () => {
  it("carries an index, never the name, within 64 bytes", () => {
    const data = modelChoiceData("A".repeat(22), 24);
    expect(data).toBe(`md:${"A".repeat(22)}:24`);
    expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
    const parsed = parseChoiceData(data);
    expect(parsed === undefined ? undefined : modelChoiceIndex(parsed)).toBe(24);
  });

  it.each(["01", "1000", "x", "1a"])("reads no index from option %j", (option) => {
    expect(modelChoiceIndex({ kind: ModelChoiceKind, id: "abc", option })).toBeUndefined();
  });

  it("reads no index from another kind's data", () => {
    expect(modelChoiceIndex({ kind: "rs", id: "abc", option: "1" })).toBeUndefined();
  });

  it("lays out one button per name in at most five rows, marking the current one", () => {
    const rows = modelButtonRows(["a", "b", "c"], "b", (i) => `d${i}`);
    expect(rows?.map((row) => row.map((b) => b.label))).toEqual([["a"], ["✓ b"], ["c"]]);
    const many = Array.from({ length: 12 }, (_, i) => `n${i}`);
    const wide = modelButtonRows(many, "n0", (i) => `d${i}`);
    expect(wide).toHaveLength(4);
    expect(wide?.flat().map((b) => b.data)).toEqual(many.map((_, i) => `d${i}`));
    expect(modelButtonRows(["only"], "only", String)).toBeUndefined();
    expect(modelButtonRows(Array.from({ length: 26 }, String), "0", String)).toBeUndefined();
  });
});

const Admin = "1";
const Member = "2";
const Other = "3";
const Stranger = "9";

function runtimeFor(groupSessionsPerUser: boolean, settings = agent) {
  const picks = new Map<string, string>();
  const profile = {
    name: "p",
    agent: settings,
    admins: [`telegram:${Admin}`],
    allowedUsers: [`telegram:${Member}`, `telegram:${Other}`],
    access: "allowlist",
    groupSessionsPerUser,
    threadSessionsPerUser: false,
  } as unknown as ProfileConfig;
  const runtime = {
    profile,
    log: silentLogger(),
    store: {
      sessionModel: async (key: string) => picks.get(key),
      setSessionModel: async (key: string, model: string | undefined) => {
        if (model === undefined) picks.delete(key);
        else picks.set(key, model);
      },
      isPaired: async () => false,
    },
  } as unknown as PipelineRuntime;
  return { runtime, picks };
}

async function offered(groupSessionsPerUser: boolean, asker: string, admin: boolean) {
  let current = runtimeFor(groupSessionsPerUser);
  const pickers = new ModelPickers({
    runtimeOf: () => current.runtime,
    logger: current.runtime.log,
  });
  const posted: { text: string; data: string[] }[] = [];
  const channel = {
    choices: {
      post: async (_target: unknown, text: string, rows: { data: string }[][]) => {
        posted.push({ text, data: rows.flat().map((b) => b.data) });
        return "m1";
      },
      close: async () => {},
    },
  } as unknown as ChannelAdapter;
  const message = {
    profile: "p",
    platform: "telegram",
    chatType: "group",
    chatId: "-100",
    userId: asker,
  } as InboundMessage;
  const sessionKey = buildSessionKey({ ...message, profile: "p" }, current.runtime.profile);
  const target = { platform: "telegram", chatId: "-100" } as const;
  const ok = await pickers.offer(
    channel,
    target,
    message,
    current.runtime,
    sessionKey,
    admin,
    "list",
  );
  expect(ok).toBe(true);
  const press = (userId: string, data: string, messageId = "m1") => {
    const parsed = parseChoiceData(data);
    if (parsed === undefined) throw new Error("unparsable");
    const p: ChoicePress = {
      profile: "p",
      platform: "telegram",
      chatId: "-100",
      messageId,
      userId,
      userName: `u${userId}`,
      data,
    };
    return pickers.onPress(p, parsed);
  };
  return {
    posted: posted[0]!,
    press,
    sessionKey,
    picks: () => current.picks,
    replaceConfig: (settings: ModelAgentSettings) => {
      current = runtimeFor(groupSessionsPerUser, settings);
    },
  };
}

describe("ModelPickers", () => {
  it("offers a member only memberModels, and a press switches the member's session once", async () => {
    const picker = await offered(true, Member, false);
    expect(picker.posted.data).toHaveLength(2);
    const answer = await picker.press(Member, picker.posted.data[1]!);
    expect(answer).toEqual({
      kind: "decided",
      text: `🔁 u2 switched this session to ${LongName} (long-x). Send /model to change it again.`,
      notice: `✅ This session now uses ${LongName} (long-x). The conversation goes on.`,
    });
    expect(picker.picks().get(picker.sessionKey)).toBe(LongName);
    expect(await picker.press(Member, picker.posted.data[0]!)).toEqual({
      kind: "refused",
      notice: `Already chosen: ${LongName} by u2. Send /model to change it again.`,
    });
    expect(picker.picks().get(picker.sessionKey)).toBe(LongName);
  });

  it("refuses another member of a per-member group session, and a stranger", async () => {
    const picker = await offered(true, Member, false);
    const other = await picker.press(Other, picker.posted.data[1]!);
    expect(other).toMatchObject({ kind: "refused", notice: expect.stringMatching(/someone else/) });
    const stranger = await picker.press(Stranger, picker.posted.data[1]!);
    expect(stranger).toEqual({
      kind: "refused",
      notice: "⛔ You are not allowed to use this bot.",
    });
    expect(picker.picks().size).toBe(0);
  });

  it("lets any allowed user of a shared group session press, with their own rights", async () => {
    const picker = await offered(false, Admin, true);
    expect(picker.posted.data).toHaveLength(3);
    const member = await picker.press(Member, picker.posted.data[2]!);
    expect(member).toEqual({
      kind: "refused",
      notice: "⛔ big is for admins only; nothing was changed. /model lists the ones you may pick.",
    });
    expect(await picker.press(Member, picker.posted.data[0]!)).toEqual({
      kind: "refused",
      notice: "This session already uses main (main-x).",
    });
    expect((await picker.press(Other, picker.posted.data[1]!)).kind).toBe("decided");
    expect(picker.picks().get(picker.sessionKey)).toBe(LongName);
  });

  it("answers forged, stale and removed-model presses clearly, changing nothing", async () => {
    const picker = await offered(false, Admin, true);
    const id = parseChoiceData(picker.posted.data[0]!)!.id;
    const gone = /^This button does nothing any more; send \/model/;
    expect((await picker.press(Admin, modelChoiceData(id, 7))).kind).toBe("refused");
    expect(await picker.press(Admin, modelChoiceData("unknownid", 0))).toMatchObject({
      notice: expect.stringMatching(gone),
    });
    expect(await picker.press(Admin, picker.posted.data[0]!, "other-message")).toMatchObject({
      notice: expect.stringMatching(gone),
    });
    picker.replaceConfig({ ...agent, models: agent.models.slice(0, 1), memberModels: ["main"] });
    expect(await picker.press(Admin, picker.posted.data[2]!)).toEqual({
      kind: "refused",
      notice: "big is no longer configured; send /model for the current choices.",
    });
    expect(picker.picks().size).toBe(0);
  });
});
