import { describe, expect, it } from "vitest";
import type { StepResult } from "../channels/types.js";
import { TextUnconfirmedText, textFailedText, textNotices } from "./notices.js";

const steps = (...entries: [string, StepResult][]) => new Map(entries);

describe("textNotices", () => {
  it("says nothing when every part of the text was sent", () => {
    expect(textNotices(steps(["text:0", "sent"], ["text:1", "sent"]), "telegram")).toEqual([]);
  });

  it("tells of a part that may not have arrived, and of a part that was not taken", () => {
    expect(textNotices(steps(["text:0", "unconfirmed"]), "telegram")).toEqual([
      TextUnconfirmedText,
    ]);
    expect(textNotices(steps(["text:0", "failed"]), "discord")).toEqual([
      "⚠️ Couldn't deliver this reply's text: Discord did not take it.",
    ]);
    expect(
      textNotices(
        steps(["text:0", "sent"], ["text:1", "failed"], ["text:2", "unconfirmed"]),
        "telegram",
      ),
    ).toEqual([TextUnconfirmedText, textFailedText("telegram", false)]);
    expect(textFailedText("telegram", false)).toBe(
      "⚠️ Couldn't deliver part of this reply's text: Telegram did not take it.",
    );
  });

  it("reads only the reply's own text: files and the outbox's notices have lines of their own", () => {
    const others = steps(
      ["media:/workspace/a.txt", "failed"],
      ["notices:plan/text:0", "unconfirmed"],
      ["notices:plan", "failed"],
      ["given_up", "failed"],
    );
    expect(textNotices(others, "telegram")).toEqual([]);
  });
});
