import { describe, expect, it } from "vitest";
import { formatDuration, parseDurationSeconds } from "./duration.js";

describe("durations an operator types (sandbox reap --older-than)", () => {
  it.each<[string, number]>([
    ["90s", 90],
    ["30m", 1_800],
    ["2h", 7_200],
    ["1.5h", 5_400],
    ["1d", 86_400],
    ["2 hours", 7_200],
    [" 10m ", 600],
  ])("reads %j as %i seconds", (text, seconds) => {
    expect(parseDurationSeconds(text)).toBe(seconds);
  });

  it("refuses a bare number, which ms would read as milliseconds, saying what to write", () => {
    expect(() => parseDurationSeconds("30")).toThrow(
      '"30" has no unit: write e.g. 30m, 30h or 30d',
    );
  });

  it.each(["", "soon", "-1h", "1 fortnight", "m30"])(
    "refuses %j, with the forms it takes",
    (text) => {
      expect(() => parseDurationSeconds(text)).toThrow(
        `"${text}" is not a duration: write e.g. 90s, 30m, 2h or 1d`,
      );
    },
  );

  it.each<[number, string]>([
    [45, "45 seconds"],
    [60, "1 minute"],
    [600, "10 minutes"],
    [5_400, "90 minutes"],
    [7_200, "2 hours"],
    [86_400, "1 day"],
    [90_061, "90061 seconds"],
    [0, "0 seconds"],
  ])("writes %i seconds as %j, exactly", (seconds, text) => {
    expect(formatDuration(seconds)).toBe(text);
  });
});
