import { afterEach, beforeEach } from "vitest";
import { FakeTelegram } from "../../fakes/telegram/index.js";
import { CliInstall } from "./cli-install.js";

/**
 * For tests that crash the real CLI against FakeTelegram: a fresh fake before each test; after
 * it, every install {@link install} made is disposed and the fake stopped.
 */
export class CliTelegram {
  #fake: FakeTelegram | undefined;
  readonly #installs: CliInstall[] = [];

  private constructor() {}

  /** Registers the hooks in the test file that calls it. */
  static perTest(): CliTelegram {
    const bench = new CliTelegram();
    beforeEach(async () => {
      bench.#fake = new FakeTelegram();
      await bench.#fake.start();
    });
    afterEach(async () => {
      await Promise.all(bench.#installs.splice(0).map((install) => install.dispose()));
      await bench.#fake?.stop();
    });
    return bench;
  }

  /** The running test's fake. */
  get fake(): FakeTelegram {
    if (this.#fake === undefined) throw new Error("CliTelegram: the fake exists only in a test");
    return this.#fake;
  }

  /** {@link CliInstall.create} with a profile that polls this test's fake, disposed after it. */
  async install(prefix: string, profile: Readonly<Record<string, unknown>>): Promise<CliInstall> {
    const { token, apiRoot } = this.fake;
    const install = await CliInstall.create(prefix, {
      telegram: { token, apiRoot, pollTimeoutSeconds: 1 },
      ...profile,
    });
    this.#installs.push(install);
    return install;
  }
}
