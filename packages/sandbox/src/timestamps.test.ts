import { describe, expect, it } from "vitest";
import { isReapable, reapAgeSeconds } from "./reaper.js";
import { parseDockerTime } from "./timestamps.js";

describe("parseDockerTime", () => {
  it.each<[unknown, string | undefined]>([
    ["2024-05-01T12:00:00Z", "2024-05-01T12:00:00.000Z"],
    ["2024-05-01T12:00:00.123456789Z", "2024-05-01T12:00:00.123Z"],
    ["2024-05-01T12:00:00.5Z", "2024-05-01T12:00:00.500Z"],
    ["2024-05-01T14:00:00.999999999+02:00", "2024-05-01T12:00:00.999Z"],
    ["0001-01-01T00:00:00Z", undefined],
    ["", undefined],
    ["yesterday", undefined],
    ["2024-13-45T99:00:00Z", undefined],
    [null, undefined],
    [17, undefined],
  ])("%j → %s", (value, expected) => {
    expect(parseDockerTime(value)?.toISOString()).toBe(expected);
  });
});

describe("reaper age rule", () => {
  const now = new Date("2024-05-01T12:00:00Z");
  const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000).toISOString();

  it("uses 2 × max(60, lifetimeSeconds)", () => {
    expect(reapAgeSeconds(300)).toBe(600);
    expect(reapAgeSeconds(10)).toBe(120);
    expect(reapAgeSeconds(60)).toBe(120);
  });

  it.each<[string, unknown, number, boolean]>([
    ["older than the threshold", ago(601), 300, true],
    ["exactly at the threshold", ago(600), 300, false],
    ["younger than the threshold", ago(599), 300, false],
    ["short lifetime clamps to 60 s", ago(119), 5, false],
    ["short lifetime clamps to 60 s (older)", ago(121), 5, true],
    ["nanosecond timestamp", "2024-05-01T11:49:59.999999999Z", 300, true],
    ["zero FinishedAt", "0001-01-01T00:00:00Z", 300, false],
    ["unparseable FinishedAt", "not a time", 300, false],
    ["missing FinishedAt", undefined, 300, false],
  ])("%s", (_, finishedAt, lifetime, expected) => {
    expect(isReapable(finishedAt, now, reapAgeSeconds(lifetime))).toBe(expected);
  });
});
