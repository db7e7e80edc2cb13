import { createLogger, Gateway, type GatewayOptions, resolveConfig } from "@mediagate/gateway";
import { manualClock } from "../../../test-support/clock.js";
import { FakeDiscord } from "../../fakes/discord/index.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
} from "./gateway-home.js";

/**
 * One in-process gateway with one Discord profile against its own Discord fake, started in a
 * fresh home: the set-up of the Discord end-to-end files. `profile` adds to (or overrides) the
 * profile's fields; `discord` adds to its `discord` block (token and `apiRoot` are the fake's);
 * `config` adds top-level keys.
 */
export class DiscordGatewayHarness {
  private constructor(
    readonly fake: FakeDiscord,
    readonly gateway: Gateway,
    readonly home: string,
    readonly profile: string,
    /** Every log line of the gateway (JSON). */
    readonly logs: readonly string[],
  ) {}

  static async start(
    prefix: string,
    token: string,
    fields: {
      readonly profile?: Readonly<Record<string, unknown>>;
      readonly discord?: (fake: FakeDiscord) => Readonly<Record<string, unknown>>;
      /** Top-level config keys besides `home` and `profiles` (`delivery`, …). */
      readonly config?: Readonly<Record<string, unknown>>;
      /** Runs after the fake started, before the gateway does (e.g. to inject failures). */
      readonly beforeStart?: (fake: FakeDiscord) => void;
      /** Further options of the gateway (a progress clock, …). */
      readonly options?: Omit<GatewayOptions, "logger">;
    } = {},
  ): Promise<DiscordGatewayHarness> {
    const fake = await FakeDiscord.start({ token });
    const home = await createTempHome(prefix);
    const profile = uniqueProfileName(prefix);
    let gateway: Gateway | undefined;
    try {
      const config = resolveConfig(
        {
          ...fields.config,
          home,
          profiles: [
            {
              name: profile,
              discord: { token, apiRoot: fake.apiRoot, ...fields.discord?.(fake) },
              sandbox: { image: TestImage, diskLimitBytes: 0 },
              ...fields.profile,
            },
          ],
        },
        { env: testEnv(home) },
      );
      const logs: string[] = [];
      const logger = createLogger({
        level: "debug",
        secrets: [token],
        destination: { write: (line: string) => void logs.push(line) },
      });
      fields.beforeStart?.(fake);
      gateway = await Gateway.create(config, {
        activityIntervalMs: 100,
        // Live progress only when a test moves this clock (or gives its own): on a loaded
        // machine a turn past the real 3 s threshold posts a status message first, and tests
        // that read a channel's first message saw that instead of the reply.
        progressClock: manualClock(),
        ...fields.options,
        logger,
      });
      await gateway.start();
      return new DiscordGatewayHarness(fake, gateway, home, profile, logs);
    } catch (error) {
      await teardownGateway(gateway, home);
      await fake.close();
      throw error;
    }
  }

  async close(): Promise<void> {
    await teardownGateway(this.gateway, this.home);
    await this.fake.close();
  }
}
