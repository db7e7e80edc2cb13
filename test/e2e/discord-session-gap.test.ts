import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  type Agent,
  createLogger,
  DiscordChannel,
  type DiscordChannelOptions,
  Gateway,
  type InboundMessage,
  resolveConfig,
  SqliteJournal,
} from "@mediagate/gateway";
import { afterEach, describe, expect, it } from "vitest";
import { manualClock } from "../../test-support/clock.js";
import { waitFor, waitUntil } from "../../test-support/wait.js";
import { FakeDiscord } from "../fakes/discord/index.js";
import {
  createTempHome,
  TestImage,
  teardownGateway,
  testEnv,
  uniqueProfileName,
} from "./harness/gateway-home.js";

/**
 * A gateway session Discord would not resume (docs/durability.md, "Catching up"): the socket
 * drops, Discord answers the RESUME with op 9 Invalid Session, discord.js IDENTIFYs anew, and
 * nothing sent in between is replayed. The real DiscordChannel and discord.js against the fake;
 * the whole gateway with its journal, or the channel over a real journal.
 */

const Token = "discord-session-gap-token-Hq3v8Lw";
const Human = "300000000000000001";
const Profile = "gap";

/** discord.js lets one IDENTIFY through per 5 s; a test's second session follows at once. */
const noIdentifyWait = async () => {};

/** Answers each message with its text: the tests count answers, not what an agent does. */
const echo: Agent = { kind: "shell", runTurn: async ({ text }) => ({ reply: `answer: ${text}` }) };

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function startFake(): Promise<FakeDiscord> {
  const fake = await FakeDiscord.start({ token: Token });
  cleanups.push(() => fake.close());
  return fake;
}

/** A controllable sleep: each wait stays pending until the test lets it go. */
function manualSleep() {
  const waits: { ms: number; wake: () => void }[] = [];
  const sleep = (ms: number, signal?: AbortSignal) =>
    new Promise<void>((resolve, reject) => {
      waits.push({ ms, wake: resolve });
      signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
    });
  return { sleep, waits };
}

function logged(logs: readonly string[], text: string): Record<string, unknown>[] {
  return logs
    .filter((line) => line.includes(text))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

/** The echo agent's answers the bot posted in a chat (not its "⏳ queued" lines), in order. */
function answersIn(fake: FakeDiscord, channelId: string): string[] {
  return fake
    .messagesIn(channelId)
    .map((message) => message.content)
    .filter((content) => content.startsWith("answer: "));
}

describe("Discord: the gateway answers what a new session missed", () => {
  /** One gateway process on `home`: its own DiscordChannel, the echo agent. */
  async function startGateway(fake: FakeDiscord, home: string, profile: string) {
    const config = resolveConfig(
      {
        home,
        profiles: [
          {
            name: profile,
            discord: { token: Token, apiRoot: fake.apiRoot },
            allowedUsers: [`discord:${Human}`],
            sandbox: { image: TestImage, diskLimitBytes: 0 },
          },
        ],
      },
      { env: testEnv(home) },
    );
    const logger = createLogger({ level: "silent" });
    const channel = new DiscordChannel({
      token: Token,
      apiRoot: fake.apiRoot,
      profile,
      logger,
      identifyWait: noIdentifyWait,
    });
    const gateway = await Gateway.create(config, {
      channels: [channel],
      agent: () => echo,
      logger,
      progressClock: manualClock(),
    });
    await gateway.start();
    return gateway;
  }

  it("answers every message of the gap once without a restart; a restart after a live one loses and repeats nothing", async () => {
    const fake = await startFake();
    const home = await createTempHome("dc-gap");
    const profile = uniqueProfileName("dc-gap");
    let gateway: Gateway | undefined = await startGateway(fake, home, profile);
    cleanups.push(() => teardownGateway(gateway, home));
    const general = fake.guild.channels[0]!.id;
    const dm = fake.world.dmChannel(Human);
    const inGeneral = (text: string) =>
      fake.sendGuildMessage(general, { content: text, mentionBot: true, authorId: Human });
    const inDm = (text: string) => fake.sendDirectMessage({ content: text, authorId: Human });
    const answers = (channelId: string) => answersIn(fake, channelId);
    const answered = (channelId: string, text: string) =>
      answers(channelId).includes(`answer: ${text}`);

    inGeneral("before");
    inDm("before in the dm");
    await waitUntil(
      () => answered(general, "before") && answered(dm, "before in the dm"),
      "the first messages to be answered",
    );

    fake.invalidateSession({ holdReconnect: true });
    const gap = ["gap 1", "gap 2", "gap 3"];
    for (const text of gap) inGeneral(text);
    inDm("gap in the dm");
    fake.releaseGateway();
    await waitUntil(
      () => gap.every((text) => answered(general, text)) && answered(dm, "gap in the dm"),
      "the messages sent in the gap to be answered",
    );
    expect(fake.gateway.invalidSessionCount).toBe(1);
    expect(fake.gateway.identifyCount).toBe(2);

    inGeneral("live after the gap");
    await waitUntil(() => answered(general, "live after the gap"), "the live message's answer");
    await gateway.stop();
    gateway = undefined;
    inGeneral("while stopped");
    gateway = await startGateway(fake, home, profile);
    await waitUntil(() => answered(general, "while stopped"), "the catch-up after the restart");
    await gateway.idle();

    expect(answers(general)).toEqual(
      ["before", ...gap, "live after the gap", "while stopped"].map((text) => `answer: ${text}`),
    );
    expect(answers(dm)).toEqual(["answer: before in the dm", "answer: gap in the dm"]);
  });

  it("answers live messages that arrive while the gap is fetched once, after the gap", async () => {
    const fake = await startFake();
    const home = await createTempHome("dc-gap-live");
    const profile = uniqueProfileName("dc-gap-live");
    const gateway = await startGateway(fake, home, profile);
    cleanups.push(() => teardownGateway(gateway, home));
    const general = fake.guild.channels[0]!.id;
    const inGeneral = (text: string) =>
      fake.sendGuildMessage(general, { content: text, mentionBot: true, authorId: Human });
    const answers = () => answersIn(fake, general);
    inGeneral("before");
    await waitUntil(() => answers().length === 1, "the first answer");

    fake.invalidateSession({ holdReconnect: true });
    inGeneral("gap 1");
    inGeneral("gap 2");
    const fetching = fake.gateRequests("GET", /^\/channels\/\d+\/messages$/);
    fake.releaseGateway();
    await fetching.reached;
    // Live, and in the history the held page will carry too.
    inGeneral("live 1");
    inGeneral("live 2");
    fetching.open();
    await waitUntil(() => answers().length >= 5, "every message to be answered");
    await gateway.idle();

    expect(answers()).toEqual(
      ["before", "gap 1", "gap 2", "live 1", "live 2"].map((text) => `answer: ${text}`),
    );
  });
});

describe("Discord: the catch-up's cursor moves past recorded messages only", () => {
  interface Journaled {
    readonly journal: SqliteJournal;
    /** Texts the journal recorded for the first time (what the gateway would run). */
    readonly ran: string[];
    /** Every text offered to the handler, refused or deduped ones too. */
    readonly offered: string[];
    /** Messages the handler refuses, as a journal on a full disk would. */
    readonly refuse: Set<string>;
    /** Messages whose recording waits until the test calls the function. */
    readonly holdBack: Map<string, Promise<void>>;
    readonly onMessage: (message: InboundMessage) => Promise<void>;
  }

  /** A real journal behind the channel's handler, recording (and deduping) like the gateway. */
  async function journaled(): Promise<Journaled> {
    const dir = await mkdtemp(path.join(tmpdir(), "mg-discord-gap-"));
    const journal = await SqliteJournal.open(path.join(dir, "journal.db"));
    cleanups.push(async () => {
      await journal.close();
      await rm(dir, { recursive: true, force: true });
    });
    const ran: string[] = [];
    const offered: string[] = [];
    const refuse = new Set<string>();
    const holdBack = new Map<string, Promise<void>>();
    const onMessage = async (message: InboundMessage) => {
      offered.push(message.text);
      await holdBack.get(message.text);
      if (refuse.has(message.text)) throw new Error("SQLITE_FULL: database or disk is full");
      if ((await journal.record(message)).fresh) ran.push(message.text);
    };
    return { journal, ran, offered, refuse, holdBack, onMessage };
  }

  /**
   * A DiscordChannel (one "process") that catches up from `target`'s journal, started;
   * `starting` resolves once it is up.
   */
  function openChannel(
    fake: FakeDiscord,
    target: Journaled,
    options: Partial<DiscordChannelOptions> = {},
  ) {
    const logs: string[] = [];
    const channel = new DiscordChannel({
      token: Token,
      apiRoot: fake.apiRoot,
      profile: Profile,
      logger: createLogger({ level: "debug", destination: { write: (line) => logs.push(line) } }),
      identifyWait: noIdentifyWait,
      commands: { register: false },
      ...options,
    });
    const starting = channel.start({
      onMessage: target.onMessage,
      onFatal: () => {},
      cursors: () => target.journal.cursors(Profile),
    });
    let stopped = false;
    const stop = async () => {
      if (stopped) return;
      stopped = true;
      await channel.stop();
    };
    cleanups.push(stop);
    return { channel, logs, stop, starting };
  }

  /** {@link openChannel}, once it is up. */
  async function startChannel(
    fake: FakeDiscord,
    target: Journaled,
    options: Partial<DiscordChannelOptions> = {},
  ) {
    const opened = openChannel(fake, target, options);
    await opened.starting;
    return opened;
  }

  const historyPages = (fake: FakeDiscord, channelId: string) =>
    fake.calls.filter(
      (call) => call.method === "GET" && call.path === `/channels/${channelId}/messages`,
    );

  it("keeps the cursor before a message the journal refused: the next start fetches it again", async () => {
    const fake = await startFake();
    const dm = fake.world.dmChannel(Human);
    const target = await journaled();
    const { sleep, waits } = manualSleep();
    const first = await startChannel(fake, target, { sleep });
    const seen = fake.sendDirectMessage({ content: "seen", authorId: Human });
    await waitFor(() => expect(target.ran).toEqual(["seen"]));

    target.refuse.add("gap refused");
    fake.invalidateSession({ holdReconnect: true });
    fake.sendDirectMessage({ content: "gap refused", authorId: Human });
    const behind = fake.sendDirectMessage({ content: "gap behind it", authorId: Human });
    fake.releaseGateway();
    await waitFor(() => expect(waits).toHaveLength(1));
    expect(target.offered).toEqual(["seen", "gap refused"]);
    expect(await target.journal.cursors(Profile)).toEqual([
      { channelId: dm, lastMessageId: seen.id },
    ]);
    await first.stop();

    target.refuse.clear();
    await startChannel(fake, target);
    await waitFor(() => expect(target.ran).toEqual(["seen", "gap refused", "gap behind it"]));
    expect(historyPages(fake, dm).map((call) => call.query.after)).toEqual([
      seen.id, // the first process's new session
      seen.id, // the restart
    ]);
    expect(await target.journal.cursors(Profile)).toEqual([
      { channelId: dm, lastMessageId: behind.id },
    ]);
  });

  it("holds a chat's live messages while its fetch fails, fetches it again later, and loses nothing", async () => {
    const fake = await startFake();
    const dm = fake.world.dmChannel(Human);
    const target = await journaled();
    const { sleep, waits } = manualSleep();
    const h = await startChannel(fake, target, {
      sleep,
      inboundRetry: { minDelayMs: 1000, maxDelayMs: 4000 },
      retry: { maxAttempts: 2, sleep: async () => {} },
    });
    const seen = fake.sendDirectMessage({ content: "seen", authorId: Human });
    await waitFor(() => expect(target.ran).toEqual(["seen"]));

    fake.invalidateSession({ holdReconnect: true });
    fake.sendDirectMessage({ content: "in the gap", authorId: Human });
    fake.injectFailure({
      kind: "server_error",
      method: "GET",
      path: /^\/channels\/\d+\/messages$/,
      times: 1000,
    });
    fake.releaseGateway();
    await waitFor(() => expect(waits.map((wait) => wait.ms)).toEqual([1000]));
    fake.sendDirectMessage({ content: "live while failing", authorId: Human });
    await waitFor(() => expect(logged(h.logs, '"msg":"message in"')).toHaveLength(2));
    waits[0]!.wake();
    await waitFor(() => expect(waits.map((wait) => wait.ms)).toEqual([1000, 2000]));
    expect(target.offered).toEqual(["seen"]);
    expect(await target.journal.cursors(Profile)).toEqual([
      { channelId: dm, lastMessageId: seen.id },
    ]);
    expect(logged(h.logs, "could not fetch this chat")).toHaveLength(1);

    fake.clearFailures();
    waits[1]!.wake();
    await waitFor(() => expect(target.ran).toEqual(["seen", "in the gap", "live while failing"]));
    expect(target.offered).toEqual(["seen", "in the gap", "live while failing"]);
    expect(logged(h.logs, "fetched this chat after retrying")).toHaveLength(1);
  });

  it("hands over nothing of a new session before its cursors are read, not even a message right behind READY", async () => {
    const fake = await startFake();
    const target = await journaled();
    const reads: (() => void)[] = [];
    const logs: string[] = [];
    const channel = new DiscordChannel({
      token: Token,
      apiRoot: fake.apiRoot,
      profile: Profile,
      logger: createLogger({ level: "debug", destination: { write: (line) => logs.push(line) } }),
      identifyWait: noIdentifyWait,
      commands: { register: false },
    });
    // Each read of the cursors waits until the test lets it go.
    const cursors = async () => {
      await new Promise<void>((resolve) => reads.push(resolve));
      return target.journal.cursors(Profile);
    };
    const starting = channel.start({ onMessage: target.onMessage, onFatal: () => {}, cursors });
    cleanups.push(() => channel.stop());
    await waitFor(() => expect(reads).toHaveLength(1));
    reads[0]!();
    await starting;
    fake.sendDirectMessage({ content: "seen", authorId: Human });
    await waitFor(() => expect(target.ran).toEqual(["seen"]));

    fake.invalidateSession({ holdReconnect: true });
    fake.sendDirectMessage({ content: "in the gap", authorId: Human });
    // Dispatched with READY and GUILD_CREATE, before discord.js has read any of them.
    fake.gateway.once("identify", () =>
      fake.sendDirectMessage({ content: "right behind READY", authorId: Human }),
    );
    fake.releaseGateway();
    await waitFor(() => expect(reads).toHaveLength(2));
    await waitFor(() => expect(logged(logs, '"msg":"message in"')).toHaveLength(2));
    expect(target.offered).toEqual(["seen"]);
    reads[1]!();

    await waitFor(() => expect(target.ran).toEqual(["seen", "in the gap", "right behind READY"]));
    expect(target.offered).toEqual(["seen", "in the gap", "right behind READY"]);
  });

  it("answers an unmentioned message a thread the bot is a member of got while it was down, its server loading late", async () => {
    const fake = await startFake();
    const thread = fake.guild.threads[0]!;
    const target = await journaled();
    const first = await startChannel(fake, target);
    fake.sendThreadMessage(thread.id, { content: "start", mentionBot: true, authorId: Human });
    await waitFor(() => expect(target.ran).toEqual(["start"]));
    // Posting there makes the bot a member of the thread (Discord's THREAD_MEMBERS_UPDATE).
    const inThread = { platform: "discord", chatId: thread.parentId, threadId: thread.id } as const;
    await first.channel.sendText(inThread, "on it");
    await first.stop();

    fake.sendThreadMessage(thread.id, { content: "while down, no mention", authorId: Human });
    fake.holdGuilds(); // READY first; the server's GUILD_CREATE (and its threads) comes later
    const { logs, starting } = openChannel(fake, target);
    // Either the catch-up went ahead without the server, or it waits for it.
    await waitFor(() =>
      expect(
        logged(logs, "discord catch-up done").length +
          logged(logs, "waiting for its servers to catch up").length,
      ).toBeGreaterThan(0),
    );
    fake.releaseGuilds();
    await starting;
    await waitFor(() => expect(target.ran).toEqual(["start", "while down, no mention"]));
  });

  it("runs a message once that was recorded live while its chat's fetch was under way", async () => {
    const fake = await startFake();
    const dm = fake.world.dmChannel(Human);
    const target = await journaled();
    await startChannel(fake, target);
    fake.sendDirectMessage({ content: "seen", authorId: Human });
    await waitFor(() => expect(target.ran).toEqual(["seen"]));

    let recordSlow!: () => void;
    target.holdBack.set(
      "slow",
      new Promise<void>((resolve) => {
        recordSlow = resolve;
      }),
    );
    fake.sendDirectMessage({ content: "slow", authorId: Human });
    await waitFor(() => expect(target.offered).toEqual(["seen", "slow"]));
    // A new session while "slow" is being recorded: its cursor is still "seen".
    const fetching = fake.gateRequests("GET", /^\/channels\/\d+\/messages$/);
    fake.invalidateSession();
    await fetching.reached;
    recordSlow();
    await waitFor(() => expect(target.ran).toEqual(["seen", "slow"]));
    fetching.open();

    await waitFor(() => expect(target.offered).toEqual(["seen", "slow", "slow"]));
    expect(target.ran).toEqual(["seen", "slow"]);
    expect(historyPages(fake, dm)).toHaveLength(1);
  });
});
