import type { MediaKind } from "@mediagate/media";
import { describe, expect, it } from "vitest";
import { planDeliverySteps } from "./delivery-steps.js";

const photos = (n: number): MediaKind[] => Array.from({ length: n }, () => "photo");

describe("planDeliverySteps", () => {
  it("sends text alone when there is no media, and nothing for blank text", () => {
    expect(planDeliverySteps("hi", [])).toEqual([{ type: "text", text: "hi" }]);
    expect(planDeliverySteps("  ", [])).toEqual([]);
  });

  it("puts a short text as the caption of the first media message", () => {
    expect(planDeliverySteps("look", ["document", "video"])).toEqual([
      { type: "single", index: 0, caption: "look" },
      { type: "single", index: 1 },
    ]);
  });

  it("sends a text over 1024 UTF-16 units first and captions nothing", () => {
    const text = "😀".repeat(513); // 1026 UTF-16 units, 513 characters
    expect(planDeliverySteps(text, ["document"])).toEqual([
      { type: "text", text },
      { type: "single", index: 0 },
    ]);
    const fits = "x".repeat(1024);
    expect(planDeliverySteps(fits, ["document"])[0]).toMatchObject({ caption: fits });
  });

  it("groups photos into albums of at most 10 where the first photo stands", () => {
    const kinds: MediaKind[] = ["document", ...photos(11), "audio", "photo"];
    const steps = planDeliverySteps("", kinds);
    expect(steps).toEqual([
      { type: "single", index: 0 },
      { type: "album", indices: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] },
      { type: "album", indices: [11, 13] },
      { type: "single", index: 12 },
    ]);
  });

  it("sends a lone photo (or a lone leftover) with sendPhoto", () => {
    expect(planDeliverySteps("", ["photo"])).toEqual([{ type: "single", index: 0 }]);
    expect(planDeliverySteps("", photos(11)).at(-1)).toEqual({ type: "single", index: 10 });
  });
});
