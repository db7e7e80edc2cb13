import { connectDocker } from "@mediagate/sandbox";
import { afterEach, describe, expect, it } from "vitest";
import {
  type CountingEngineProxy,
  startCountingEngineProxy,
} from "../../../../test-support/counting-engine-proxy.js";
import type { GatewayCore } from "./core.js";
import { engineReachable } from "./health.js";

/** The parts of a gateway the engine's health reads, with a clock the test moves. */
function healthParts(host: string) {
  let monoMs = 0;
  const parts = {
    engine: connectDocker({ host }),
    engineProbe: {},
    clock: { monoMs: () => monoMs, wallMs: () => 1_700_000_000_000 + monoMs },
  };
  return {
    gateway: parts as unknown as GatewayCore,
    advance: (ms: number) => {
      monoMs += ms;
    },
  };
}

describe("the engine's health", () => {
  let proxy: CountingEngineProxy | undefined;
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  it("pings the engine once for a burst of probes, and again once the answer is old", async () => {
    proxy = await startCountingEngineProxy();
    const { gateway, advance } = healthParts(proxy.host);
    const burst = await Promise.all(Array.from({ length: 8 }, () => engineReachable(gateway)));
    expect(burst.every((answer) => answer.reachable)).toBe(true);
    expect(proxy.count("/_ping")).toBe(1);
    advance(1_000);
    await engineReachable(gateway);
    expect(proxy.count("/_ping")).toBe(1);
    advance(10_000);
    await Promise.all([engineReachable(gateway), engineReachable(gateway)]);
    expect(proxy.count("/_ping")).toBe(2);
  });
});
