import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { currentInstanceId } from "./instance.js";
import {
  containerLabels,
  isPersistentSlot,
  keepsSlotDirs,
  LabelKeys,
  sanitizeLabelValue,
  slotHash,
} from "./labels.js";

describe("sanitizeLabelValue", () => {
  it.each<[unknown, string]>([
    ["default", "default"],
    ["t-1_a.b", "t-1_a.b"],
    ["profile:work", "profile_work"],
    ["a b/c", "a_b_c"],
    ["é", "_"],
    ["x".repeat(64), "x".repeat(63)],
    ["", "unknown"],
    [undefined, "unknown"],
    [null, "unknown"],
    [42, "unknown"],
    [{ toString: () => "x" }, "unknown"],
  ])("%j → %j", (value, expected) => {
    expect(sanitizeLabelValue(value)).toBe(expected);
  });

  it("always yields 1–63 safe characters", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        expect(sanitizeLabelValue(value)).toMatch(/^[A-Za-z0-9_.-]{1,63}$/);
      }),
    );
  });

  it("keeps safe strings up to 63 chars unchanged", () => {
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_.-]{1,63}$/), (value) => {
        expect(sanitizeLabelValue(value)).toBe(value);
      }),
    );
  });
});

const owner = (profile: string) => ({ install: "0123456789ab", profile });

describe("containerLabels", () => {
  it("marks the agent, the install, the owning process, the label-safe slot and profile, and the full slot hash", () => {
    expect(containerLabels(owner("work"), "session:agent:work:dm:1")).toEqual({
      [LabelKeys.agent]: "1",
      [LabelKeys.install]: "0123456789ab",
      [LabelKeys.owner]: currentInstanceId(),
      [LabelKeys.slot]: "session_agent_work_dm_1",
      [LabelKeys.profile]: "work",
      [LabelKeys.slotHash]: slotHash("session:agent:work:dm:1"),
      [LabelKeys.persistent]: "0",
    });
  });

  it("tells apart slots whose label-safe values collide", () => {
    const a = containerLabels(owner("p"), `session:${"x".repeat(70)}:1`);
    const b = containerLabels(owner("p"), `session:${"x".repeat(70)}:2`);
    expect(a[LabelKeys.slot]).toBe(b[LabelKeys.slot]);
    expect(a[LabelKeys.slotHash]).not.toBe(b[LabelKeys.slotHash]);
  });
});

describe("persistent slots", () => {
  it.each<[string, boolean]>([
    ["default", true],
    ["profile:work", true],
    ["shared:team", true],
    ["session:agent:work:dm:1", false],
    ["task-42", false],
    ["defaults", false],
  ])("%s → %s", (slot, persistent) => {
    expect(isPersistentSlot(slot)).toBe(persistent);
    expect(keepsSlotDirs(containerLabels(owner("p"), slot))).toBe(persistent);
  });

  it("classifies containers without the persistent label by their slot label, keeping when unsure", () => {
    const legacy = (slot: string) => {
      const { [LabelKeys.persistent]: _, ...labels } = containerLabels(owner("p"), slot);
      return keepsSlotDirs(labels);
    };
    expect(legacy("default")).toBe(true);
    expect(legacy("profile:work")).toBe(true);
    expect(legacy("shared:team")).toBe(true);
    expect(legacy("session:k")).toBe(false);
    expect(legacy("task-1")).toBe(false);
    expect(keepsSlotDirs({ [LabelKeys.agent]: "1" })).toBe(true);
    expect(keepsSlotDirs(undefined)).toBe(true);
  });
});
