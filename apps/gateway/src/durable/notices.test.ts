import type { MediaOutcome } from "@mediagate/media";
import { describe, expect, it } from "vitest";
import type { StepResult } from "../channels/types.js";
import {
  deliveryNotice,
  planNotices,
  TextUnconfirmedText,
  textFailedText,
  textNotices,
} from "./notices.js";

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

describe("planNotices", () => {
  const unreachable = (path: string, reason: "not_found" | "over_max_files"): MediaOutcome => ({
    status: "unreachable",
    path,
    reason,
    candidates: [],
  });

  it("gives the files past the reply's cap one line saying why, however many there are", () => {
    // A reply that names 500 files: 20 are planned, the other 480 are left out on purpose.
    // Each of them used to get its own "Couldn't deliver" line, as if it were missing.
    const overCap = Array.from({ length: 480 }, (_, i) =>
      unreachable(`/workspace/charts/chart-${i + 21}.png`, "over_max_files"),
    );
    const outcomes = [unreachable("/workspace/nope.png", "not_found"), ...overCap];
    expect(planNotices({ outcomes })).toEqual([
      "⚠️ Couldn't deliver nope.png",
      "⚠️ 480 more files were not sent (chart-21.png, chart-22.png, chart-23.png and 477 more): one reply sends at most 20 files.",
    ]);
    expect(planNotices({ outcomes: overCap.slice(0, 1) })).toEqual([
      "⚠️ 1 more file was not sent (chart-21.png): one reply sends at most 20 files.",
    ]);
  });

  it("shows an agent's file name without bidi overrides, cut between code points", () => {
    // U+202E would show "report<U+202E>txt.exe" as "reportexe.txt".
    const [spoofed] = planNotices({
      outcomes: [unreachable("/workspace/report\u202etxt.exe", "not_found")],
    });
    expect(spoofed).toBe("⚠️ Couldn't deliver reporttxt.exe");
    // An emoji across the cut: half of it would make Telegram refuse the whole notice.
    const [cut] = planNotices({
      outcomes: [unreachable(`/workspace/${"x".repeat(118)}📊📊.png`, "not_found")],
    });
    expect(cut).toBe(`⚠️ Couldn't deliver ${"x".repeat(118)}📊…`);
    expect(
      deliveryNotice({ status: "upload_failed", path: "/workspace/a\u2067b.txt", error: "500" }),
    ).toBe("⚠️ Couldn't deliver ab.txt: the upload failed.");
  });

  it("shows a tag's name as a notice may: no control characters, bounded", () => {
    const long = `/workspace/${"x".repeat(500)}\u0007.png`;
    const [line] = planNotices({ outcomes: [unreachable(long, "over_max_files")] });
    expect(line).toBe(
      `⚠️ 1 more file was not sent (${"x".repeat(119)}…): one reply sends at most 20 files.`,
    );
  });
});
