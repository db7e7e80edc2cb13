import { describe, expect, it } from "vitest";
import { ImageMissingError, type ImagePullProgress } from "../src/index.js";
import { testEngine } from "./helpers.js";

/** No registry is reachable here, and `example.invalid` never resolves anywhere. */
const Unpullable = "example.invalid/mediagate/pull-test:1";

describe("pulling a missing image (no registry reachable)", () => {
  it("fails with ImageMissingError naming the image, the engine's reason and both ways out", async () => {
    const engine = testEngine();
    const seen: ImagePullProgress[] = [];
    const error = await engine
      .pullImage(Unpullable, { onProgress: (p) => seen.push(p) })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ImageMissingError);
    const missing = error as ImageMissingError;
    expect(missing.image).toBe(Unpullable);
    expect(missing.pullFailure).toContain("example.invalid");
    expect(missing.message).toContain(`Docker image ${Unpullable} is not on the engine`);
    expect(missing.message).toContain("scripts/build-sandbox-image.sh mediagate-sandbox:local");
    expect(missing.message).toContain(`docker pull ${Unpullable}`);
    expect(seen).toEqual([]);
    expect(await engine.hasImage(Unpullable)).toBe(false);
  });

  it("says the registry cannot be reached when asked whether an image can be pulled", async () => {
    const check = await testEngine().checkRegistry(Unpullable);
    expect(check.pullable).toBe(false);
    expect(check.pullable === false && check.reason).toContain("example.invalid");
  });

  it("stops before asking the engine when the caller already gave up", async () => {
    const error = await testEngine()
      .pullImage(Unpullable, { signal: AbortSignal.abort(new Error("gave up")) })
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ message: "gave up" });
  });
});
