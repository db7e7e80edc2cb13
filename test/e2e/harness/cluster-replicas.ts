import type { FakeTelegram } from "../../fakes/telegram/index.js";
import { CliInstall } from "./cli-install.js";

/** One replica of a cluster test: its own home, the shared profile, webhook mode. */
export interface WebhookReplica {
  /** Its install's name (a prefix of its home). */
  readonly name: string;
  /** The profile every replica serves (one bot, one set of sessions). */
  readonly profile: string;
  /** The user allowed in. */
  readonly user: number;
  /** The load balancer's URL Telegram posts to (`<url>/telegram`). */
  readonly url: string;
  /** Where this replica's webhook listens (`host:port`), behind the load balancer. */
  readonly listen: string;
  /** The PostgreSQL database every replica shares (maybe through a proxy). */
  readonly databaseUrl: string;
  /** `cluster.slotsDir`: where persistent slots keep their files, seen by every replica. */
  readonly slotsDir?: string;
}

/**
 * A gateway replica through the real CLI (docs/cluster.md): served by `fake` in webhook mode,
 * on `store: { kind: postgres }`, progress off.
 */
export function webhookReplica(fake: FakeTelegram, replica: WebhookReplica): Promise<CliInstall> {
  return CliInstall.create(
    replica.name,
    {
      name: replica.profile,
      telegram: {
        token: fake.token,
        apiRoot: fake.apiRoot,
        webhook: {
          url: `${replica.url}/telegram`,
          listen: replica.listen,
          secretToken: "cluster-secret",
        },
      },
      allowedUsers: [`telegram:${replica.user}`],
      progress: { enabled: false },
    },
    {
      store: { kind: "postgres", url: replica.databaseUrl },
      ...(replica.slotsDir === undefined ? {} : { cluster: { slotsDir: replica.slotsDir } }),
    },
  );
}

/** How many turns `install`'s processes ran to an answer (not handed to another replica). */
export const turnsOf = (install: CliInstall): number =>
  install
    .output()
    .split("\n")
    .filter((line) => line.includes('"msg":"turn finished"') && line.includes('"exit":"ok"'))
    .length;

/** The texts the bot posted to `user` in `fake`, in order. */
export const sentTo = (fake: FakeTelegram, user: number): string[] =>
  fake
    .callsTo("sendMessage")
    .filter((call) => call.ok && String(call.params.chat_id) === String(user))
    .map((call) => String(call.params.text));
