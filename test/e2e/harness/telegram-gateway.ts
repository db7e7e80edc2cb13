import { createHash, randomBytes } from "node:crypto";
import { realpathSync } from "node:fs";
import { join } from "node:path";
import {
  createLogger,
  Gateway,
  type GatewayConfig,
  type GatewayOptions,
  LogRing,
  type ProfileRuntime,
  resolveConfig,
} from "@mediagate/gateway";
import type { Update } from "grammy/types";
import { type ManualClock, manualClock } from "../../../test-support/clock.js";
import {
  FakeTelegram,
  type FakeTelegramOptions,
  type RecordedCall,
} from "../../fakes/telegram/index.js";
import { DockerObserver, type ObservedContainer } from "./docker-observer.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
  waitUntil,
} from "./gateway-home.js";

/** One profile of a {@link TelegramGatewayHarness}: who may use it and what it runs. */
export interface TelegramProfileSpec {
  /**
   * The profile name; default a unique one. Give the same name to profiles of two harnesses
   * (two installs on one engine) to see that their homes keep them apart.
   */
  readonly name?: string;
  /** Telegram user ids that are admins. */
  readonly admins?: readonly number[];
  /** Telegram user ids that are allowed (not admins). */
  readonly allowed?: readonly number[];
  /** Other keys of the profile entry (e.g. `stillWorkingAfterSeconds`). */
  readonly settings?: Readonly<Record<string, unknown>>;
  /** Options of this profile's FakeTelegram (`localFiles`); token and bot are the harness's. */
  readonly fake?: Pick<FakeTelegramOptions, "localFiles">;
  /** Extra `telegram` config keys (the token and API root are the fake's). */
  readonly telegram?: Readonly<Record<string, unknown>>;
  /** The profile's `agent` config entry; default the shell agent. */
  readonly agent?: Readonly<Record<string, unknown>>;
  /**
   * Extra `sandbox` config keys (the image is always the test image; no disk ceiling unless
   * a test asks for `diskLimitBytes`: each ceiling holds a loop device); a function gets the
   * profile's home first (e.g. to mount it as a volume).
   */
  readonly sandbox?:
    | Readonly<Record<string, unknown>>
    | ((profileHome: string) => Readonly<Record<string, unknown>>);
}

/** A file that arrived at the fake in a successful upload call. */
export interface ArrivedFile {
  readonly method: string;
  readonly filename: string | undefined;
  readonly bytes: Buffer;
  readonly params: Readonly<Record<string, unknown>>;
}

const chatOf = (call: RecordedCall): string => String(call.params.chat_id);

/** The install id of a root home: 12 hex of sha256 of its real path. */
export const installOf = (rootHome: string): string =>
  createHash("sha256").update(realpathSync(rootHome)).digest("hex").slice(0, 12);

/**
 * One profile's bot: its own FakeTelegram (own token), seen from the chat side. Sends updates
 * the way Telegram would and reads back what the gateway sent, by chat.
 */
export class TelegramBot {
  constructor(
    readonly profile: string,
    readonly fake: FakeTelegram,
    /** The root home (`MEDIAGATE_HOME`) of the gateway serving this bot. */
    readonly rootHome: string,
    private readonly gateway: () => Gateway,
    private readonly docker: DockerObserver,
  ) {}

  /** The gateway's runtime of this profile (for its slot dirs and state; not to drive it). */
  get runtime(): ProfileRuntime {
    const runtime = this.gateway().runtimes.get(this.profile);
    if (runtime === undefined) throw new Error(`no runtime for ${this.profile}`);
    return runtime;
  }

  /**
   * Where the profile's container keeps its files on the host, computed from docs/sandbox.md
   * (not asked of the gateway): `<profile home>/sandboxes/docker/<sanitized "profile:<name>">`,
   * the slot key holding a `:` so it is cleaned and suffixed with 12 hex of its sha256.
   */
  profileSlotDir(): string {
    const slot = `profile:${this.profile}`;
    const hash = createHash("sha256").update(slot).digest("hex").slice(0, 12);
    return join(
      this.runtime.profile.home,
      "sandboxes",
      "docker",
      `${slot.replace(":", "_")}-${hash}`,
    );
  }

  /** Index into `fake.calls` to read what comes after (see `since` parameters). */
  mark(): number {
    return this.fake.calls.length;
  }

  /**
   * Queues the update and resolves once grammY confirmed it (the next poll's offset is past
   * it), i.e. the gateway has received the message. Does not wait for the turn.
   */
  async post(push: (fake: FakeTelegram) => Update): Promise<Update> {
    const update = push(this.fake);
    await waitUntil(() => this.fake.pendingUpdates === 0, `update ${update.update_id} taken`);
    return update;
  }

  /** {@link post}, then waits until every message the gateway received is fully handled. */
  async handle(push: (fake: FakeTelegram) => Update): Promise<Update> {
    const update = await this.post(push);
    await this.gateway().idle();
    return update;
  }

  /**
   * Sends `text` as `user` in a private chat and waits until it is handled: the texts that
   * chat received meanwhile, one a line.
   */
  async ask(user: number, text: string): Promise<string> {
    const since = this.mark();
    await this.handle((fake) => fake.sendPrivateText({ userId: user, text }));
    return this.texts(user, since).join("\n");
  }

  /** Every call to `chatId` recorded after `since`. */
  callsIn(chatId: number | string, since = 0): RecordedCall[] {
    return this.fake.calls.slice(since).filter((call) => chatOf(call) === String(chatId));
  }

  /** Texts the chat received after `since` (messages and captions, successful calls only). */
  texts(chatId: number | string, since = 0): string[] {
    return this.callsIn(chatId, since)
      .filter((call) => call.ok && call.method !== "sendChatAction")
      .flatMap((call) => {
        if (call.method === "sendMessage") return [String(call.params.text)];
        if (call.params.caption !== undefined) return [String(call.params.caption)];
        if (Array.isArray(call.params.media)) {
          return (call.params.media as { caption?: string }[])
            .map((m) => m.caption)
            .filter((c): c is string => c !== undefined);
        }
        return [];
      });
  }

  /** Files that arrived in successful upload calls to the chat after `since`. */
  arrived(chatId: number | string, since = 0): ArrivedFile[] {
    return this.callsIn(chatId, since)
      .filter((call) => call.ok)
      .flatMap((call) =>
        call.files.map((file) => ({
          method: call.method,
          filename: file.filename,
          bytes: file.bytes,
          params: call.params,
        })),
      );
  }

  /** Every file any call carried (failed attempts too), in every chat: for "never sent" checks. */
  everyUploadedByte(): Buffer {
    return Buffer.concat(this.fake.calls.flatMap((call) => call.files.map((f) => f.bytes)));
  }

  /**
   * This profile's containers as the Docker engine lists them: by the profile label and the
   * install label of this harness's home (computed here from the root home's real path, as
   * docs/security.md defines it, not asked of the gateway).
   */
  containers(): Promise<ObservedContainer[]> {
    return this.docker.containers({
      "mediagate.agent": "1",
      "mediagate.profile": this.profile,
      "mediagate.install": installOf(this.rootHome),
    });
  }

  /** The id of the profile's one running container; fails when there is not exactly one. */
  async runningContainer(): Promise<string> {
    const running = (await this.containers()).filter((c) => c.state === "running");
    if (running.length !== 1) {
      throw new Error(`expected one running container of ${this.profile}, got ${running.length}`);
    }
    return running[0]!.id;
  }
}

/**
 * The whole gateway as `mediagate start` builds it, in-process: a config with one Telegram
 * bot per profile (each with its own FakeTelegram and token), `Gateway.create` → the channel
 * factory → the real TelegramChannel and grammY, the real Docker engine. A unique profile name
 * per profile and a temp `MEDIAGATE_HOME` per harness; `close()` removes what it made.
 */
export class TelegramGatewayHarness {
  readonly docker = new DockerObserver();
  readonly bots: readonly TelegramBot[];
  /**
   * The clock of turns' status messages (docs/sessions.md, "Live progress"): it moves only
   * when a test advances it, so no other test sees a status message, however slow its turns.
   */
  readonly progressClock: ManualClock;
  /**
   * The clock of the profiles' state databases (pairing codes expire by it): it starts at the
   * real time (a CLI run on the same home agrees with it) and moves only when a test says so.
   */
  readonly stateClock: ManualClock;
  #gateway: Gateway;

  private constructor(
    gateway: Gateway,
    readonly config: GatewayConfig,
    readonly home: string,
    fakes: readonly FakeTelegram[],
    private readonly options: GatewayOptions,
    /** Bot tokens and API keys of the config. */
    readonly secrets: readonly string[],
    /** Every log line of the gateway (JSON), for diagnosis and secrecy checks. */
    readonly logs: readonly string[],
    stateClock: ManualClock,
  ) {
    this.#gateway = gateway;
    this.progressClock = options.progressClock as ManualClock;
    this.stateClock = stateClock;
    this.bots = fakes.map(
      (fake, i) =>
        new TelegramBot(config.profiles[i]!.name, fake, home, () => this.#gateway, this.docker),
    );
  }

  /** The running gateway (a new one after {@link restart}). */
  get gateway(): Gateway {
    return this.#gateway;
  }

  /**
   * @param options.drainTimeoutMs how long a stop lets running turns finish before aborting
   *   them (the gateway's default otherwise).
   * @param options.outboxSchedule replaces the outbox's timers (a long `retry_after`).
   * @param options.retrySleep replaces the wait between send attempts (a short `retry_after`).
   * @param options.albumSchedule replaces the quiet windows of albums received by webhook.
   * @param options.settings top-level config keys (e.g. `recovery`).
   * @param options.web serve the web console on a free loopback port (`gateway.webUrl`), its
   *   Logs page fed by the test logger.
   */
  static async start(
    prefix: string,
    specs: readonly TelegramProfileSpec[],
    options: {
      readonly drainTimeoutMs?: number;
      readonly outboxSchedule?: GatewayOptions["outboxSchedule"];
      readonly retrySleep?: GatewayOptions["retrySleep"];
      readonly albumSchedule?: GatewayOptions["albumSchedule"];
      readonly settings?: Readonly<Record<string, unknown>>;
      readonly web?: boolean;
    } = {},
  ): Promise<TelegramGatewayHarness> {
    const home = await createTempHome(prefix);
    const fakes: FakeTelegram[] = [];
    const stateClock = manualClock(Date.now());
    let gateway: Gateway | undefined;
    try {
      const profiles = [];
      for (const [index, spec] of specs.entries()) {
        const botId = 700_000 + index;
        const fake = new FakeTelegram({
          token: `${botId}:AA${randomBytes(12).toString("hex")}`,
          botId,
          botUsername: `mg_e2e_${index}_bot`,
          // Telegram's clock is the test's: a message sent after the state clock moved on is
          // dated then, as the gateway's answers to typed approvals expect (docs/approvals.md).
          now: stateClock.now,
          ...spec.fake,
        });
        const { apiRoot } = await fake.start();
        fakes.push(fake);
        const name = spec.name ?? uniqueProfileName(prefix);
        const sandbox =
          typeof spec.sandbox === "function"
            ? spec.sandbox(join(home, "profiles", name))
            : spec.sandbox;
        profiles.push({
          ...spec.settings,
          name,
          telegram: { ...spec.telegram, token: fake.token, apiRoot },
          admins: (spec.admins ?? []).map((id) => `telegram:${id}`),
          allowedUsers: (spec.allowed ?? []).map((id) => `telegram:${id}`),
          sandbox: { image: TestImage, diskLimitBytes: 0, ...sandbox },
          ...(spec.agent === undefined ? {} : { agent: spec.agent }),
        });
      }
      const web = options.web === true ? { web: { listen: "127.0.0.1:0" } } : {};
      const config = resolveConfig(
        { ...options.settings, ...web, home, profiles },
        { env: testEnv(home) },
      );
      const logRing = options.web === true ? new LogRing(2000) : undefined;
      const logs: string[] = [];
      const secrets = [
        ...fakes.map((f) => f.token),
        ...specs.flatMap((s) => (typeof s.agent?.apiKey === "string" ? [s.agent.apiKey] : [])),
      ];
      const logger = createLogger({
        level: "debug",
        secrets,
        destination: { write: (line: string) => void logs.push(line) },
        ring: logRing,
      });
      const gatewayOptions: GatewayOptions = {
        logger,
        activityIntervalMs: 200,
        // Typing from the turn's start (the default waits a second): the tests see it for
        // their quick commands too.
        typingAfterMs: 0,
        progressClock: manualClock(),
        now: stateClock.now,
        // Approvals expire by the state clock: a test advances it past the expiry.
        approvalSchedule: stateClock.schedule,
        // Pairing's refusal summaries are written once the test moves it past their period.
        refusalSchedule: stateClock.schedule,
        // Tasks come due by it too (docs/schedules.md): a test advances it to a due time.
        taskClock: { wallMs: stateClock.now, monoMs: stateClock.now },
        taskSchedule: stateClock.schedule,
        logRing,
        ...(options.drainTimeoutMs === undefined ? {} : { drainTimeoutMs: options.drainTimeoutMs }),
        ...(options.outboxSchedule === undefined ? {} : { outboxSchedule: options.outboxSchedule }),
        ...(options.retrySleep === undefined ? {} : { retrySleep: options.retrySleep }),
        ...(options.albumSchedule === undefined ? {} : { albumSchedule: options.albumSchedule }),
      };
      gateway = await TelegramGatewayHarness.#create(config, gatewayOptions);
      return new TelegramGatewayHarness(
        gateway,
        config,
        home,
        fakes,
        gatewayOptions,
        secrets,
        logs,
        stateClock,
      );
    } catch (error) {
      await teardownGateway(gateway, home).catch(() => {});
      for (const fake of fakes) await fake.stop();
      throw error;
    }
  }

  static async #create(config: GatewayConfig, options: GatewayOptions): Promise<Gateway> {
    const gateway = await Gateway.create(config, options);
    await gateway.start();
    return gateway;
  }

  /** Stops the gateway as a shutdown would (containers stay) and waits until it is down. */
  async stopGateway(): Promise<void> {
    await this.#gateway.stop();
  }

  /**
   * Stops the gateway (unless {@link stopGateway} already did) and starts a new one on the same
   * config, home and Bot API fakes, as a restarted `mediagate start` would.
   */
  async restart(): Promise<void> {
    await this.#gateway.stop();
    this.#gateway = await TelegramGatewayHarness.#create(this.config, this.options);
  }

  /** The bot of profile `index` (in the order given to `start`). */
  bot(index = 0): TelegramBot {
    const bot = this.bots[index];
    if (bot === undefined) throw new Error(`no profile #${index}`);
    return bot;
  }

  /** Stops the gateway, removes its containers and home, stops the fakes. */
  async close(): Promise<void> {
    try {
      await teardownGateway(this.#gateway, this.home);
    } finally {
      for (const bot of this.bots) await bot.fake.stop();
    }
  }
}
