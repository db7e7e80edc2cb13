import type { FakeTelegram } from "../../fakes/telegram/index.js";
import { CliInstall } from "./cli-install.js";

/** What {@link telegramInstalls} gives a test file. */
export interface TelegramInstalls {
  /**
   * A CLI install served by the file's Telegram fake, `users` allowed (`[User]` by default),
   * progress off, `recovery.rerunInterrupted` on, `telegram` and `settings` merged in.
   */
  install(
    prefix: string,
    telegram: Record<string, unknown>,
    settings: Record<string, unknown>,
    users?: readonly number[],
  ): Promise<CliInstall>;
  /** The texts the bot posted to `user`, in order. */
  repliesTo(user: number): string[];
  /** Disposes of every install made since the last call (an `afterEach`). */
  disposeAll(): Promise<void>;
}

/**
 * Gateways through the real CLI against a Telegram fake the test file starts per test
 * (`fakeOf` reads it), as the PostgreSQL end-to-end files use them.
 */
export function telegramInstalls(fakeOf: () => FakeTelegram, user: number): TelegramInstalls {
  const installs: CliInstall[] = [];
  return {
    async install(prefix, telegram, settings, users = [user]) {
      const fake = fakeOf();
      const created = await CliInstall.create(
        prefix,
        {
          telegram: { token: fake.token, apiRoot: fake.apiRoot, ...telegram },
          allowedUsers: users.map((id) => `telegram:${id}`),
          progress: { enabled: false },
        },
        { recovery: { rerunInterrupted: true }, ...settings },
      );
      installs.push(created);
      return created;
    },
    repliesTo: (to) =>
      fakeOf()
        .callsTo("sendMessage")
        .filter((call) => call.ok && String(call.params.chat_id) === String(to))
        .map((call) => String(call.params.text)),
    async disposeAll() {
      await Promise.all(installs.splice(0).map((install) => install.dispose()));
    },
  };
}
