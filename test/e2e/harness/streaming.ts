import { afterEach, beforeEach } from "vitest";
import {
  type RecordedCall as DiscordCall,
  type DiscordEditLimits,
  FakeDiscord,
} from "../../fakes/discord/index.js";
import { FakeOpenAIServer } from "../../fakes/openai/index.js";
import { FakeTelegram, type RecordedCall } from "../../fakes/telegram/index.js";
import { CliInstall } from "./cli-install.js";

/*
 * The set-ups of the streaming e2e files (docs/streaming.md) and of their SIGKILL halves in the
 * long suite: the real CLI with the openai agent streaming from the fake model, a fresh
 * platform fake and model per test.
 */

/** The private chat's user of the Telegram streaming files. */
export const StreamUser = 88;

/** 10,000 characters in numbered lines, so every split point and order shows. */
export const LongAnswer = Array.from(
  { length: 200 },
  (_, i) => `line ${String(i).padStart(3, "0")}: ${"streamed text ".repeat(3).trim()}`,
)
  .join("\n")
  .slice(0, 10_000);

/** What {@link useTelegramStreaming} gives a test file; read its fields inside a test. */
export interface TelegramStreaming {
  /** This test's Bot API fake, keeping Telegram's edit limits. */
  readonly fake: FakeTelegram;
  /** This test's model, streaming what the test queues. */
  readonly model: FakeOpenAIServer;
  /** A gateway of the openai agent on the fake model, disposed after the test. */
  install(prefix: string, profile?: Record<string, unknown>): Promise<CliInstall>;
  /** The bot's successful calls to `chatId`, from call `since` on. */
  inChat(chatId: number, since?: number): RecordedCall[];
  /** The bot's messages the chat still shows (not deleted), in the order they were sent. */
  shown(chatId: number, since?: number): string[];
}

/** Streamed replies on Telegram: telegram-streaming.test.ts and its SIGKILL half. */
export function useTelegramStreaming(): TelegramStreaming {
  let fake: FakeTelegram | undefined;
  let model: FakeOpenAIServer | undefined;
  const disposers: (() => Promise<void>)[] = [];
  beforeEach(async () => {
    fake = new FakeTelegram();
    await fake.start();
    fake.limitEdits();
    model = await FakeOpenAIServer.start();
  });
  afterEach(async () => {
    await Promise.all(disposers.splice(0).map((dispose) => dispose()));
    await model?.close();
    await fake?.stop();
  });
  const theFake = (): FakeTelegram => {
    if (fake === undefined) throw new Error("useTelegramStreaming: read it inside a test");
    return fake;
  };
  const theModel = (): FakeOpenAIServer => {
    if (model === undefined) throw new Error("useTelegramStreaming: read it inside a test");
    return model;
  };
  const inChat = (chatId: number, since = 0): RecordedCall[] =>
    theFake()
      .calls.slice(since)
      .filter((call) => call.ok && String(call.params.chat_id) === String(chatId));
  return {
    get fake() {
      return theFake();
    },
    get model() {
      return theModel();
    },
    async install(prefix, profile = {}) {
      const made = await CliInstall.create(prefix, {
        telegram: {
          token: theFake().token,
          apiRoot: theFake().apiRoot,
          pollTimeoutSeconds: 1,
          groups: { requireMention: false },
        },
        allowedUsers: [`telegram:${StreamUser}`],
        agent: { kind: "openai", baseUrl: theModel().baseUrl, model: "fake-model" },
        ...profile,
      });
      disposers.push(() => made.dispose());
      return made;
    },
    inChat,
    shown: (chatId, since = 0) =>
      inChat(chatId, since)
        .filter((call) => call.method === "sendMessage")
        .map((call) => (call.result as { message_id: number }).message_id)
        .flatMap((id) => {
          const message = theFake().botMessage(chatId, id);
          return message === undefined ? [] : [String(message.text)];
        }),
  };
}

/** The Discord user of the Discord streaming files, and the bot's token there. */
export const StreamHumanId = "300000000000000002";
const DiscordToken = "discord-stream-token-Zk4q";

/** What {@link useDiscordStreaming} gives a test file; read its fields inside a test. */
export interface DiscordStreaming {
  readonly fake: FakeDiscord;
  /** The fake's edit limits (Discord's five edits per five seconds), set for every test. */
  readonly limits: DiscordEditLimits;
  readonly model: FakeOpenAIServer;
  /** A gateway streaming by edits (`stream: "edit"`), disposed after the test. */
  install(prefix: string, settings?: Record<string, unknown>): Promise<CliInstall>;
  /** What the DM shows now, in order: each message's text, or `file:<name>` for an upload. */
  shown(dm: string): string[];
  /** The bot's successful message creates in the DM. */
  creates(dm: string): DiscordCall[];
  /** The bot's calls of `method` on the DM's messages. */
  ofMessages(dm: string, method: string): DiscordCall[];
}

/** Streamed replies on Discord: discord-streaming.test.ts and its SIGKILL half. */
export function useDiscordStreaming(): DiscordStreaming {
  let fake: FakeDiscord | undefined;
  let limits: DiscordEditLimits | undefined;
  let model: FakeOpenAIServer | undefined;
  const disposers: (() => Promise<void>)[] = [];
  beforeEach(async () => {
    fake = await FakeDiscord.start({ token: DiscordToken });
    limits = fake.limitEdits();
    model = await FakeOpenAIServer.start();
  });
  afterEach(async () => {
    await Promise.all(disposers.splice(0).map((dispose) => dispose()));
    await model?.close();
    await fake?.close();
  });
  const inTest = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("useDiscordStreaming: read it inside a test");
    return value;
  };
  return {
    get fake() {
      return inTest(fake);
    },
    get limits() {
      return inTest(limits);
    },
    get model() {
      return inTest(model);
    },
    async install(prefix, settings = {}) {
      const made = await CliInstall.create(
        prefix,
        {
          discord: { token: DiscordToken, apiRoot: inTest(fake).apiRoot },
          allowedUsers: [`discord:${StreamHumanId}`],
          agent: { kind: "openai", baseUrl: inTest(model).baseUrl, model: "fake-model" },
          stream: "edit",
        },
        settings,
      );
      disposers.push(() => made.dispose());
      return made;
    },
    shown: (dm) =>
      inTest(fake)
        .messagesIn(dm)
        .map((message) =>
          message.files.length > 0
            ? `file:${message.files.map((file) => file.filename).join(",")}`
            : message.content,
        ),
    creates: (dm) =>
      inTest(fake).calls.filter(
        (call) =>
          call.method === "POST" && call.path === `/channels/${dm}/messages` && call.status === 200,
      ),
    ofMessages: (dm, method) =>
      inTest(fake).calls.filter(
        (call) => call.method === method && call.path.startsWith(`/channels/${dm}/messages/`),
      ),
  };
}
