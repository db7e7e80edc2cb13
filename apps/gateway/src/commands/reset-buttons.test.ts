import { describe, expect, it } from "vitest";
import type { ChannelAdapter, ChatTarget, InboundMessage } from "../channels/types.js";
import { formatChoiceData } from "../choices/choice-data.js";
import { Defaults } from "../defaults.js";
import { silentLogger } from "../log.js";
import { ResetConfirmations, ResetGoneText, ResetRestartedText } from "./reset-buttons.js";

const target: ChatTarget = { platform: "telegram", chatId: "7" };
const message = { profile: "p", platform: "telegram", chatId: "7", userId: "1" } as InboundMessage;

/** A channel whose buttons are recorded: each post answers the next message id. */
function recordingChannel() {
  const closed: [string, string][] = [];
  const posted: string[] = [];
  const channel = {
    choices: {
      post: async (_target: ChatTarget, _text: string, rows: { data: string }[][]) => {
        posted.push(rows[0]![0]!.data);
        return String(posted.length);
      },
      close: async (_target: ChatTarget, messageId: string, text: string) => {
        closed.push([messageId, text]);
      },
    },
  } as unknown as ChannelAdapter;
  return { channel, closed, posted };
}

describe("ResetConfirmations", () => {
  it("closes the questions still open at the stop, leaves expired ones, and forgets them all", async () => {
    let now = 0;
    const { channel, closed, posted } = recordingChannel();
    const resets = new ResetConfirmations({
      runtimeOf: () => undefined,
      services: () => {
        throw new Error("no reset runs here");
      },
      now: () => now,
      logger: silentLogger(),
    });
    expect(await resets.ask(channel, target, message, "k1", "first?")).toBe(true);
    now = Defaults.approvals.expiresSeconds * 1000 - 1;
    expect(await resets.ask(channel, target, message, "k2", "second?")).toBe(true);
    now += 2;
    await resets.closeAll();
    expect(closed).toEqual([["2", ResetRestartedText]]);

    const [id] = posted[0]!.split(":").slice(1);
    const answer = await resets.onPress(
      {
        profile: "p",
        platform: "telegram",
        chatId: "7",
        messageId: "1",
        userId: "1",
        data: posted[0]!,
      },
      { kind: "rs", id: id!, option: "ok" },
    );
    expect(answer).toEqual({ kind: "refused", notice: ResetGoneText });
    expect(formatChoiceData({ kind: "rs", id: id!, option: "ok" })).toBe(posted[0]);
  });
});
