import { mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setImmediate as tick } from "node:timers/promises";
import type { TranslateContext, UploadLimits } from "@mediagate/media";
import {
  type ContainerState,
  type ExecResult,
  formatSlotKey,
  slotTraits,
} from "@mediagate/sandbox";
import { afterAll, beforeAll, describe, expect, it, onTestFinished, vi } from "vitest";
import { waitFor } from "../../../../test-support/wait.js";
import type { Agent, AgentTurnInput } from "../agents/types.js";
import type {
  ChannelAdapter,
  ChannelHealth,
  ChatTarget,
  DeliverOptions,
  DeliveryReport,
  InboundMessage,
  OutboundReply,
  StatusReactions,
} from "../channels/types.js";
import { describeChannel } from "../commands/status.js";
import { emptyEnv } from "../config/env.js";
import { resolveConfig } from "../config/load.js";
import type { ProfileConfig } from "../config/types.js";
import { StorageError } from "../durable/errors.js";
import { journalDbPath, SqliteJournal } from "../durable/journal.js";
import { Outbox, OutboxDefaults } from "../durable/outbox.js";
import { createLogger, type Logger, silentLogger } from "../log.js";
import { PostgresStoreError } from "../postgres/errors.js";
import { SlotRegistry } from "../sandbox-access/slot-registry.js";
import { BusySessions } from "../session/busy.js";
import { RunLater, TurnQueue } from "../session/queue.js";
import { RefusalText } from "./authorize.js";
import { StoreDownText } from "./boundary.js";
import { DeliveryFailedText, InterruptedTurnText } from "./enqueue-turn.js";
import { handleMessage } from "./pipeline.js";
import { RevokedWhileQueuedText } from "./recheck-access.js";
import { TurnFailedText } from "./run-turn.js";
import type {
  MessageContext,
  PipelineRuntime,
  PipelineServices,
  SandboxOps,
  SessionHold,
} from "./types.js";

/*
 * Test kit for pipeline unit tests: a ChannelAdapter that records what it was asked to send
 * (our own interface), and a runtime whose sandbox records every call. Real Docker behaviour
 * is covered by the end-to-end tests.
 */
class RecordingChannel implements ChannelAdapter {
  readonly platform = "telegram" as const;
  readonly profile = "main";
  health(): ChannelHealth {
    return { platform: "telegram", profile: this.profile, state: "up", sinceMs: 0 };
  }
  readonly limits: UploadLimits = { maxBytes: () => 50 * 1024 * 1024 };
  readonly texts: string[] = [];
  readonly replies: { sessionKey: string; profile: string; text: string; files: string[] }[] = [];
  /** Every text the chat got, in order: lines sent at once and delivered replies (answers). */
  readonly said: string[] = [];
  async start(): Promise<void> {}
  async stop(): Promise<void> {}
  async sendText(_target: ChatTarget, text: string): Promise<void> {
    this.texts.push(text);
    this.said.push(text);
  }
  async deliver(reply: OutboundReply, _options?: DeliverOptions): Promise<DeliveryReport> {
    this.said.push(reply.text);
    this.replies.push({
      sessionKey: reply.sessionKey,
      profile: reply.profile,
      text: reply.text,
      files: reply.plan.ready().map((m) => m.filename),
    });
    return { outcomes: [] };
  }
  async showActivity(): Promise<void> {}
}

/** A sandbox that records calls; `run` echoes the command. */
function recordingSandbox(calls: string[]): SandboxOps {
  const result = (stdout: string): ExecResult => ({
    exitCode: 0,
    stdout,
    stderr: "",
    truncated: false,
    timedOut: false,
    aborted: false,
    durationMs: 0,
  });
  return {
    run: async (slot, sessionKey, command) => {
      calls.push(`run ${slot} ${sessionKey} ${command}`);
      return result(command);
    },
    saveToInbox: async (slot, files) => {
      calls.push(`saveToInbox ${slot} ${files.length}`);
      return [];
    },
    killSession: async (sessionKey) => {
      calls.push(`killSession ${sessionKey}`);
      return 0;
    },
    killSlot: async (slot) => {
      calls.push(`killSlot ${slot}`);
      return 7;
    },
    cleanup: async (slot, opts) => {
      calls.push(`cleanup ${slot} ${JSON.stringify(opts)}`);
    },
    status: async (slot) => {
      calls.push(`status ${slot}`);
      return { containerId: "c0ffee", state: "running" as ContainerState };
    },
    readFile: async (slot, path) => {
      calls.push(`readFile ${slot} ${path}`);
      return undefined;
    },
    slotDirectory: (slot) => `/nonexistent/${slot}`,
  };
}

/** A profile with the given users, via the real config resolver. */
function testProfile(overrides: Record<string, unknown> = {}): ProfileConfig {
  const config = resolveConfig(
    {
      profiles: [
        {
          name: "t",
          allowedUsers: ["telegram:1", "telegram:2"],
          admins: ["telegram:1"],
          ...overrides,
        },
      ],
    },
    { env: emptyEnv("/tmp/mg-unit") },
  );
  return config.profiles[0]!;
}

/** A runtime over {@link recordingSandbox} and a counting in-memory store. */
function testRuntime(
  agent: Agent,
  calls: string[],
  profile = testProfile(),
  log: Logger = silentLogger(),
): PipelineRuntime {
  const ids = new Map<string, number>();
  let rotations = 0;
  return {
    profile,
    log,
    agent,
    store: {
      currentSessionId: async (key) => {
        calls.push(`currentSessionId ${key}`);
        return `sid-${ids.get(key) ?? 0}`;
      },
      rotateSessionId: async (key) => {
        rotations++;
        ids.set(key, (ids.get(key) ?? 0) + 1);
        calls.push(`rotateSessionId ${key}`);
        return `sid-${ids.get(key)}`;
      },
      get rotations() {
        return rotations;
      },
      // Pairing is off in these profiles (access: allowlist): it is never asked.
      now: () => 0,
      isPaired: async () => false,
      requestPairing: async () => ({ status: "full" }),
      approvePairing: async () => ({ status: "unknown" }),
      // The shell agent of these profiles has no models: /model and /usage never ask.
      sessionModel: async () => undefined,
      setSessionModel: async () => {},
      usagePeriods: async () => {
        throw new Error("no usage in a shell profile");
      },
    },
    sandbox: recordingSandbox(calls),
    slotFor: (key) =>
      formatSlotKey(
        profile.sandbox.persistent
          ? { kind: "profile", name: "t" }
          : { kind: "session", sessionKey: key ?? "" },
      ),
    isSharedSlot: (slot) => slotTraits(slot).sharedBySessions,
    pairingRefusals: { count: () => {} },
    translateContext: (): TranslateContext => ({
      backend: "docker",
      slotDirs: [],
      volumes: [],
      allowDirs: [],
      protectedHomes: [],
      tmpDir: "/tmp",
    }),
  };
}

/** The real journal, one per file (in a temp dir); each test's messages have their own keys. */
let journal: SqliteJournal;
let journalDir: string;
beforeAll(async () => {
  journalDir = await mkdtemp(join(tmpdir(), "mg-pipeline-"));
  journal = await SqliteJournal.open(journalDbPath(journalDir));
});
afterAll(async () => {
  await journal.close();
  await rm(journalDir, { recursive: true, force: true });
});

/** Where the outbox of {@link testServices} sends: the last context's channel and runtime. */
let wired: { channel?: ChannelAdapter; runtime?: PipelineRuntime } = {};

/** Fresh process-wide services; `schedule` replaces the outbox's timers. */
function testServices(
  concurrency = 4,
  schedule?: (run: () => void, delayMs: number) => () => void,
): PipelineServices {
  return {
    queue: new TurnQueue({ concurrency }),
    busy: new BusySessions(),
    slots: new SlotRegistry(),
    journal,
    outbox: new Outbox({
      journal,
      logger: silentLogger(),
      channelFor: () => wired.channel,
      translateContextFor: () => wired.runtime?.translateContext,
      schedule,
    }),
    channels: () => [],
  };
}

/** A message context for `text` from telegram user `userId`. */
function testContext(
  runtime: PipelineRuntime,
  services: PipelineServices,
  channel: RecordingChannel,
  text: string,
  userId = "1",
  chatType: InboundMessage["chatType"] = "dm",
  log: Logger = silentLogger(),
): MessageContext {
  wired = { channel, runtime };
  const message: InboundMessage = {
    profile: runtime.profile.name,
    platform: "telegram",
    chatId: chatType === "dm" ? userId : "-100",
    chatType,
    userId,
    messageId: String(Math.random()),
    text,
    receiptId: String(Math.random()),
  };
  return {
    message,
    channel,
    runtime,
    services,
    target: { platform: "telegram", chatId: message.chatId },
    log,
  };
}

/** A JSON logger whose lines are kept (bound to profile and platform, as the gateway does). */
function capturedLog(profile = "t") {
  const lines: string[] = [];
  const root = createLogger({ level: "trace", destination: { write: (l) => lines.push(l) } });
  const entries = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  return { log: root.child({ profile, platform: "telegram" }), entries };
}

/** An agent that records each turn's input and answers with the text. */
/**
 * Makes `channel` reject every delivery of the reply `text` ("platform down"), counting the
 * attempts; the outbox's own notices still go through its recording `deliver`.
 */
function failReply(channel: RecordingChannel, text: string): { attempts: number } {
  const failing = { attempts: 0 };
  const { deliver } = channel;
  channel.deliver = (reply, options) => {
    if (reply.text !== text) return deliver.call(channel, reply, options);
    failing.attempts++;
    return Promise.reject(new Error("platform down"));
  };
  return failing;
}

function echoAgent(seen: AgentTurnInput[]): Agent {
  return {
    kind: "shell",
    async runTurn(input) {
      seen.push(input);
      return { reply: `you said: ${input.text}` };
    },
  };
}

/** A promise the test resolves when it chooses: `open()` resolves `opened`. */
function latch(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

/**
 * An outbox over the test journal whose first `addReply` (a turn's reply, not a command's
 * answer after it) waits until `release` opens; `recording` opens when it is called.
 */
function replyHeldOutbox(): {
  outbox: Outbox;
  recording: ReturnType<typeof latch>;
  release: ReturnType<typeof latch>;
} {
  const recording = latch();
  const release = latch();
  let recorded = 0;
  const slowJournal = new Proxy(journal, {
    get(target, key) {
      const value = Reflect.get(target, key, target) as unknown;
      if (key !== "addReply" || typeof value !== "function") {
        return typeof value === "function" ? value.bind(target) : value;
      }
      return async (...args: unknown[]) => {
        if (recorded++ === 0) {
          recording.open();
          await release.opened;
        }
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const outbox = new Outbox({
    journal: slowJournal,
    logger: silentLogger(),
    channelFor: () => wired.channel,
    translateContextFor: () => wired.runtime?.translateContext,
  });
  return { outbox, recording, release };
}

/**
 * An agent whose first turn runs until it is aborted (`firstRunning` resolves once it started)
 * and whose later turns answer at once, so that a turn that should not have run shows in
 * `started` instead of hanging the test.
 */
function stoppableAgent(): {
  agent: Agent;
  started: AgentTurnInput[];
  firstRunning: Promise<void>;
} {
  const started: AgentTurnInput[] = [];
  const running = latch();
  const agent: Agent = {
    kind: "shell",
    runTurn: (input) => {
      started.push(input);
      if (started.length > 1) return Promise.resolve({ reply: "ran after /stop all" });
      running.open();
      return new Promise((_resolve, reject) => {
        input.signal.addEventListener("abort", () => reject(new Error("aborted")));
      });
    },
  };
  return { agent, started, firstRunning: running.opened };
}

/**
 * Two messages of one session (user 2, no admin): the second sent while the first's turn runs
 * its agent, or once the first's reply went out (the channel has it) while that delivery is
 * still to be confirmed and the turn still to finish. What the chat was told, and the order in
 * which turns ran and replies went out.
 */
async function secondMessageArriving(
  when: "while the turn runs" | "after the reply went out",
): Promise<{ texts: string[]; order: string[] }> {
  const order: string[] = [];
  let releaseAgent!: () => void;
  const agentHeld = new Promise<void>((resolve) => {
    releaseAgent = resolve;
  });
  let confirmDelivery!: () => void;
  const deliveryHeld = new Promise<void>((resolve) => {
    confirmDelivery = resolve;
  });
  const agent: Agent = {
    kind: "shell",
    async runTurn(input) {
      order.push(`turn: ${input.text}`);
      if (input.text === "first") await agentHeld;
      return { reply: input.text };
    },
  };
  const channel = new RecordingChannel();
  const { deliver } = channel;
  channel.deliver = async (reply, options) => {
    const report = await deliver.call(channel, reply, options);
    order.push(`sent: ${reply.text}`);
    if (reply.text === "first") await deliveryHeld;
    order.push(`confirmed: ${reply.text}`);
    return report;
  };
  const services = testServices();
  const runtime = testRuntime(agent, []);
  const first = handleMessage(testContext(runtime, services, channel, "first", "2"));
  if (when === "while the turn runs") await waitFor(() => expect(order).toEqual(["turn: first"]));
  else {
    releaseAgent();
    await waitFor(() => expect(order).toEqual(["turn: first", "sent: first"]));
  }
  const second = handleMessage(testContext(runtime, services, channel, "second", "2"));
  await waitFor(() => expect(services.queue.queued("agent:t:telegram:dm:2")).toBe(1));
  releaseAgent();
  confirmDelivery();
  await Promise.all([first, second]);
  return { texts: channel.texts, order };
}

describe("message pipeline", () => {
  it("an unknown user gets one refusal line in a DM, no turn, no session and no sandbox work", async () => {
    const calls: string[] = [];
    const seen: AgentTurnInput[] = [];
    const runtime = testRuntime(echoAgent(seen), calls);
    const channel = new RecordingChannel();
    await handleMessage(testContext(runtime, testServices(), channel, "ls", "999"));
    expect(seen).toEqual([]);
    expect(calls).toEqual([]);
    // The refusal is the only thing the chat gets: no reply of a turn.
    expect(channel.said).toEqual([`${RefusalText} (telegram:999)`]);
  });

  it.each([
    ["allow list", testProfile()],
    ["pairing", testProfile({ access: "pairing" })],
  ] as const)(
    "a task run of a user no longer allowed (%s) is refused without a word to the chat",
    async (_access, profile) => {
      const calls: string[] = [];
      const seen: AgentTurnInput[] = [];
      const runtime = testRuntime(echoAgent(seen), calls, profile);
      const channel = new RecordingChannel();
      const ctx = testContext(runtime, testServices(), channel, "ls", "999");
      const receiptId = "task:t1:60000";
      const run = {
        ...ctx,
        message: {
          ...ctx.message,
          receiptId,
          messageId: receiptId,
          scheduled: { taskId: "t1", dueMs: 60_000 },
        },
      };
      await handleMessage(run);
      expect(seen).toEqual([]);
      expect(calls).toEqual([]);
      // Every run of the task would otherwise tell the removed user again (or offer them a code).
      expect(channel.said).toEqual([]);
    },
  );

  it("an unknown user in a group is ignored silently", async () => {
    const calls: string[] = [];
    const channel = new RecordingChannel();
    const runtime = testRuntime(echoAgent([]), calls);
    await handleMessage(testContext(runtime, testServices(), channel, "ls", "999", "group"));
    expect(channel.said).toEqual([]);
    expect(calls).toEqual([]);
  });

  it("an allowed user's turn runs with its identity and the reply carries session key and profile", async () => {
    const seen: AgentTurnInput[] = [];
    const runtime = testRuntime(echoAgent(seen), []);
    const channel = new RecordingChannel();
    await handleMessage(testContext(runtime, testServices(), channel, "hello", "2", "group"));
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({
      text: "hello",
      profile: "t",
      sessionKey: "agent:t:telegram:group:-100:user:2",
      sessionId: "sid-0",
    });
    expect(channel.replies).toEqual([
      {
        sessionKey: "agent:t:telegram:group:-100:user:2",
        profile: "t",
        text: "you said: hello",
        files: [],
      },
    ]);
  });

  it("the agent's notices go to the chat before its reply", async () => {
    const agent: Agent = {
      kind: "openai",
      runTurn: async () => ({ reply: "the answer", notices: ["🎙️ v.ogg could not be transcribed"] }),
    };
    const channel = new RecordingChannel();
    const order: string[] = [];
    const { sendText, deliver } = channel;
    channel.sendText = async (target, text) => {
      order.push(`text: ${text}`);
      await sendText.call(channel, target, text);
    };
    channel.deliver = async (reply) => {
      order.push(`reply: ${reply.text}`);
      return deliver.call(channel, reply);
    };
    await handleMessage(testContext(testRuntime(agent, []), testServices(), channel, "hi"));
    expect(order).toEqual(["text: 🎙️ v.ogg could not be transcribed", "reply: the answer"]);
  });

  it("queued turns of different sessions each run with their own identity, whoever ran before them", async () => {
    const services = testServices(1);
    // What each turn was given, read again after each of its awaits: the turn's message text
    // names its sender, the identity it carries must be that sender's.
    const observed: [text: string, sessionKey: string, user: string | undefined][] = [];
    const agent: Agent = {
      kind: "shell",
      async runTurn(input) {
        for (let i = 0; i < 3; i++) {
          observed.push([input.text, input.sessionKey, input.user]);
          await tick();
          await input.tools.run("true");
        }
        return { reply: "ok" };
      },
    };
    const runtime = testRuntime(agent, []);
    const channel = new RecordingChannel();
    await Promise.all(
      ["1", "2", "1", "2"].map((user) =>
        handleMessage(testContext(runtime, services, channel, `from ${user}`, user)),
      ),
    );
    expect(observed).toHaveLength(12);
    for (const [text, sessionKey, user] of observed) {
      const sender = text.slice("from ".length);
      expect(sessionKey).toBe(`agent:${runtime.profile.name}:telegram:dm:${sender}`);
      expect(user).toBe(`telegram:${sender}`);
    }
    expect(new Set(observed.map(([, key]) => key)).size).toBe(2);
  });

  it("a turn that starts at once runs with the session id read when its message was bound", async () => {
    const calls: string[] = [];
    const seen: AgentTurnInput[] = [];
    const runtime = testRuntime(echoAgent(seen), calls);
    const channel = new RecordingChannel();
    await handleMessage(testContext(runtime, testServices(), channel, "one", "1"));
    await handleMessage(testContext(runtime, testServices(), channel, "two", "1"));
    expect(seen.map((input) => input.sessionId)).toEqual(["sid-0", "sid-0"]);
    expect(calls.filter((c) => c.startsWith("currentSessionId"))).toHaveLength(2);
  });

  it("a /reset between binding a message and its turn makes the turn read the new session id", async () => {
    const calls: string[] = [];
    const seen: AgentTurnInput[] = [];
    const runtime = testRuntime(echoAgent(seen), calls);
    const services = testServices();
    // The message's bind read answers only after the /reset rotated the id (with the old id,
    // as read before the rotation).
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let reads = 0;
    const slowFirstRead: PipelineRuntime = {
      ...runtime,
      store: {
        ...runtime.store,
        currentSessionId: async (key) => {
          const id = await runtime.store.currentSessionId(key);
          if (++reads === 1) await released;
          return id;
        },
        rotateSessionId: (key) => runtime.store.rotateSessionId(key),
        get rotations() {
          return runtime.store.rotations;
        },
      },
    };
    const channel = new RecordingChannel();
    const message = handleMessage(testContext(slowFirstRead, services, channel, "after", "1"));
    await handleMessage(testContext(runtime, services, channel, "/reset confirm", "1"));
    release();
    await message;
    expect(calls).toContain("rotateSessionId agent:t:telegram:dm:1");
    expect(seen.map((input) => input.sessionId)).toEqual(["sid-1"]);
  });

  it("tool calls run in the session's slot with its session key", async () => {
    const calls: string[] = [];
    const agent: Agent = {
      kind: "shell",
      async runTurn(input) {
        const r = await input.tools.run("echo hi");
        return { reply: r.stdout };
      },
    };
    const runtime = testRuntime(agent, calls);
    await handleMessage(testContext(runtime, testServices(), new RecordingChannel(), "x", "1"));
    expect(calls).toContain("run profile:t agent:t:telegram:dm:1 echo hi");
  });

  it("a non-admin using /stop, /reset or /status is refused and nothing happens", async () => {
    for (const command of ["/stop", "/stop all", "/reset", "/reset confirm", "/status"]) {
      const calls: string[] = [];
      const channel = new RecordingChannel();
      const runtime = testRuntime(echoAgent([]), calls);
      await handleMessage(testContext(runtime, testServices(), channel, command, "2"));
      expect(channel.said).toEqual([
        `⛔ /${command.slice(1).split(" ")[0]} is for admins only; nothing was done.`,
      ]);
      expect(calls.filter((c) => !c.startsWith("currentSessionId"))).toEqual([]);
    }
  });

  it("/stop from an admin bypasses the queue and aborts the running turn", async () => {
    const services = testServices();
    const calls: string[] = [];
    let started!: () => void;
    const startedP = new Promise<void>((r) => {
      started = r;
    });
    const agent: Agent = {
      kind: "shell",
      runTurn: (input) =>
        new Promise((_resolve, reject) => {
          started();
          input.signal.addEventListener("abort", () => reject(new Error("aborted")));
        }),
    };
    const runtime = testRuntime(agent, calls, testProfile({ sandbox: { persistent: false } }));
    const channel = new RecordingChannel();
    const turn = handleMessage(testContext(runtime, services, channel, "sleep 1000", "1"));
    const queued = handleMessage(testContext(runtime, services, channel, "echo later", "1"));
    await startedP;
    await handleMessage(testContext(runtime, services, channel, "/stop", "1"));
    await Promise.all([turn, queued]);
    const answer =
      "🛑 Stopped: aborted the running turn, dropped 1 queued message(s), removed the session's container.";
    expect(channel.said).toEqual(["⏳ queued — 1 ahead; /stop cancels", answer]);
    // The turns replied nothing: the one reply delivered is the command's answer.
    expect(channel.replies.map((r) => r.text)).toEqual([answer]);
    expect(calls).toContain("killSession agent:t:telegram:dm:1");
    expect(calls).toContain(
      'cleanup session:agent:t:telegram:dm:1 {"force":true,"deleteDirs":true}',
    );
  });

  it("a message sent once its session's reply went out is not told it is queued, and runs after that turn", async () => {
    const inOrder = [
      "turn: first",
      "sent: first",
      "confirmed: first",
      "turn: second",
      "sent: second",
      "confirmed: second",
    ];
    expect(await secondMessageArriving("while the turn runs")).toEqual({
      texts: ["⏳ queued — 1 ahead"],
      order: inOrder,
    });
    expect(await secondMessageArriving("after the reply went out")).toEqual({
      texts: [],
      order: inOrder,
    });
  });

  it("/stop all from an admin aborts every turn on the slot, drops their queues and kills the slot", async () => {
    const services = testServices();
    const calls: string[] = [];
    const started: string[] = [];
    let bothStarted!: () => void;
    const running = new Promise<void>((r) => {
      bothStarted = r;
    });
    const agent: Agent = {
      kind: "shell",
      runTurn: (input) =>
        new Promise((_resolve, reject) => {
          started.push(input.sessionKey);
          if (started.length === 2) bothStarted();
          input.signal.addEventListener("abort", () => reject(new Error("aborted")));
        }),
    };
    const runtime = testRuntime(agent, calls);
    const channel = new RecordingChannel();
    const turns = [
      handleMessage(testContext(runtime, services, channel, "sleep 1000", "2")),
      handleMessage(testContext(runtime, services, channel, "echo later", "2")),
      handleMessage(testContext(runtime, services, channel, "sleep 1000", "1")),
    ];
    await running;
    await handleMessage(testContext(runtime, services, channel, "/stop all", "1"));
    await Promise.all(turns);
    const answer =
      "🛑 Stopped everything in slot profile:t: killed 7 process(es), aborted 2 running turn(s), dropped 1 queued message(s).";
    expect(channel.said).toEqual(["⏳ queued — 1 ahead", answer]);
    expect(channel.replies.map((r) => r.text)).toEqual([answer]);
    expect(calls).toContain("killSlot profile:t");
    expect(calls.some((c) => c.startsWith("killSession") || c.startsWith("cleanup"))).toBe(false);
  });

  it("/stop all drops the queued message of a session whose turn never started", async () => {
    // One turn at a time: user 2's first message waits behind the admin's turn, never having run.
    const services = testServices(1);
    const calls: string[] = [];
    const { agent, started, firstRunning } = stoppableAgent();
    const runtime = testRuntime(agent, calls);
    const channel = new RecordingChannel();
    const turns = [
      handleMessage(testContext(runtime, services, channel, "sleep 1000", "1")),
      handleMessage(testContext(runtime, services, channel, "echo waiting", "2")),
    ];
    await firstRunning;
    await vi.waitFor(() => expect(services.queue.queued("agent:t:telegram:dm:2")).toBe(1));
    await handleMessage(testContext(runtime, services, channel, "/stop all", "1"));
    await Promise.all(turns);
    expect(channel.said).toEqual([
      "🛑 Stopped everything in slot profile:t: killed 7 process(es), aborted 1 running turn(s), dropped 1 queued message(s).",
    ]);
    expect(started.map((input) => input.sessionKey)).toEqual(["agent:t:telegram:dm:1"]);
  });

  it("/reset on a shared slot asks for confirmation first; /reset confirm rotates and tears down", async () => {
    const calls: string[] = [];
    const services = testServices();
    const channel = new RecordingChannel();
    const runtime = testRuntime(echoAgent([]), calls);
    await handleMessage(testContext(runtime, services, channel, "hi", "2"));
    await handleMessage(testContext(runtime, services, channel, "/reset", "1"));
    expect(channel.said[1]).toContain("shared: 2 sessions known to this gateway use it");
    expect(calls.some((c) => c.startsWith("cleanup") || c.startsWith("rotate"))).toBe(false);
    await handleMessage(testContext(runtime, services, channel, "/reset confirm", "1"));
    expect(calls).toContain("rotateSessionId agent:t:telegram:dm:1");
    expect(calls).toContain('cleanup profile:t {"force":true,"deleteDirs":true}');
    expect(channel.said[2]).toMatch(/^♻️ Reset: new conversation started, removed the container/);
    // Removing the container ends its processes: nothing is run inside it first.
    expect(calls.some((c) => c.startsWith("killSession") || c.startsWith("killSlot"))).toBe(false);
  });

  it("/stop all whose kill fails says so and logs the failure with its cause", async () => {
    const calls: string[] = [];
    const { log, entries } = capturedLog();
    const cause = new Error("the kill container for 0123456789ab ended without a count");
    // The sandbox package's error, by name (the pipeline never imports its classes).
    class SandboxError extends Error {
      override readonly name = "SandboxError";
    }
    const failure = new SandboxError("killSlot failed for slot profile:t", { cause });
    const runtime: PipelineRuntime = {
      ...testRuntime(echoAgent([]), calls, testProfile(), log),
      sandbox: {
        ...recordingSandbox(calls),
        killSlot: async () => {
          throw failure;
        },
      },
    };
    const channel = new RecordingChannel();
    await handleMessage(testContext(runtime, testServices(), channel, "/stop all", "1"));
    expect(channel.said).toEqual([
      "Nothing was stopped in slot profile:t. ⚠️ sandbox error (SandboxError; the gateway's log has the cause).",
    ]);
    const logged = entries().find(
      (e) => e.msg === "/stop all: killing the slot's processes failed",
    );
    expect(logged).toMatchObject({
      level: 50,
      profile: "t",
      slot: "profile:t",
      sessionKey: "agent:t:telegram:dm:1",
      err: { type: "SandboxError" },
    });
    expect(JSON.stringify(logged)).toContain("ended without a count");
  });

  it("a reply the channel cannot deliver is retried from the outbox, then given up with one clear line", async () => {
    const channel = new RecordingChannel();
    const failing = failReply(channel, "you said: hi");
    const runtime = testRuntime(echoAgent([]), []);
    const delays: number[] = [];
    // Retries fire at once instead of after their backoff; the delays are what was asked for.
    const services = testServices(4, (run, delayMs) => {
      delays.push(delayMs);
      setImmediate(run);
      return () => {};
    });
    await handleMessage(testContext(runtime, services, channel, "hi", "1"));
    await waitFor(() => expect(channel.replies).toHaveLength(1));
    expect(failing.attempts).toBe(OutboxDefaults.maxAttempts);
    expect(delays).toEqual([30_000, 60_000, 120_000, 240_000, 480_000, 960_000, 1_800_000]);
    expect(channel.replies[0]?.text).toMatch(
      /^⚠️ A reply could not be delivered \(8 attempt\(s\) over 1 min\): platform down$/,
    );
  });

  it("/status from an admin ends with one line per channel: state, why, when the platform last answered", async () => {
    const channel = new RecordingChannel();
    const runtime = testRuntime(echoAgent([]), []);
    const services: PipelineServices = {
      ...testServices(),
      channels: () => [
        {
          platform: "telegram",
          profile: "t",
          state: "retrying",
          sinceMs: 0,
          lastOkMs: Date.now() - 42_000,
          detail: "409 Conflict: another process polls this bot",
        },
        { platform: "discord", profile: "t", state: "up", sinceMs: 0 },
      ],
    };
    await handleMessage(testContext(runtime, services, channel, "/status", "1"));
    expect(channel.said[0]?.split("\n").slice(-2)).toEqual([
      expect.stringMatching(
        /^Channel telegram \(t\): retrying \(409 Conflict: another process polls this bot\), last answer \d+ s ago$/,
      ),
      "Channel discord (t): up",
    ]);
    expect(
      describeChannel(
        { platform: "telegram", profile: "w", state: "up", sinceMs: 0, lastOkMs: 10_000 },
        13_400,
      ),
    ).toBe("Channel telegram (w): up, last answer 3 s ago");
    expect(
      describeChannel(
        {
          platform: "telegram",
          profile: "w",
          state: "up",
          sinceMs: 0,
          lastOkMs: 10_000,
          mode: "webhook",
          webhookError: { message: "Connection refused", atMs: 3_400 },
        },
        13_400,
      ),
    ).toBe(
      "Channel telegram (w) by webhook: up, last answer 3 s ago; webhook last error 10 s ago: Connection refused",
    );
  });

  it("a reply older than delivery.maxAgeSeconds is given up at its next attempt and reported in its chat", async () => {
    const channel = new RecordingChannel();
    const failing = failReply(channel, "you said: hi");
    const scheduled: { run: () => void; delayMs: number }[] = [];
    let laterMs = 0; // how far the outbox's monotonic clock has moved on
    const services: PipelineServices = {
      ...testServices(),
      outbox: new Outbox({
        journal,
        logger: silentLogger(),
        channelFor: () => wired.channel,
        translateContextFor: () => wired.runtime?.translateContext,
        maxAgeMs: 60 * 60_000,
        clock: { wallMs: () => Date.now(), monoMs: () => laterMs },
        schedule: (run, delayMs) => {
          scheduled.push({ run, delayMs });
          return () => {};
        },
      }),
    };
    await handleMessage(testContext(testRuntime(echoAgent([]), []), services, channel, "hi", "1"));
    expect(scheduled.map((s) => s.delayMs)).toEqual([30_000]);
    expect(channel.replies).toEqual([]);

    laterMs = 2 * 60 * 60_000; // the retry comes two hours late: past the one-hour cap
    scheduled[0]!.run();
    await waitFor(() => expect(channel.replies).toHaveLength(1));
    expect(channel.replies[0]?.text).toBe(
      "⚠️ A reply could not be delivered (1 attempt(s) over 120 min): platform down",
    );
    expect(failing.attempts).toBe(1);
    expect(scheduled).toHaveLength(1);
  });

  it("records each message in the journal and closes it with what became of it", async () => {
    const channel = new RecordingChannel();
    const runtime = testRuntime(echoAgent([]), []);
    const services = testServices();
    const outcomes: Record<string, string | undefined> = {};
    for (const [text, userId, chatType] of [
      ["hello", "1", "dm"],
      ["/status", "1", "dm"],
      ["ls", "999", "dm"],
    ] as const) {
      const ctx = testContext(runtime, services, channel, text, userId, chatType);
      const { id } = await journal.record(ctx.message);
      await handleMessage({ ...ctx, entryId: id });
      outcomes[text] = (await journal.entryState(id))?.outcome ?? undefined;
    }
    expect(outcomes).toEqual({ hello: "replied", "/status": "command", ls: "refused" });
  });
});

describe("turn log line and error boundary", () => {
  it("logs one info line per turn: session, how it ended, reply size and each part's outcome, no text", async () => {
    const agent: Agent = {
      kind: "shell",
      async runTurn(input) {
        await input.tools.run("first");
        await input.tools.run("second");
        return { reply: "secret reply words\nMEDIA:/workspace/missing.png" };
      },
    };
    const channel = new RecordingChannel();
    const { log, entries } = capturedLog();
    const ctx = testContext(testRuntime(agent, []), testServices(), channel, "private words");
    await handleMessage({ ...ctx, log });
    const info = entries().filter((e) => (e.level as number) >= 30);
    const turns = info.filter((e) => e.msg === "turn finished");
    expect(turns).toHaveLength(1);
    expect(turns[0]).toMatchObject({
      profile: "t",
      platform: "telegram",
      sessionKey: "agent:t:telegram:dm:1",
      exit: "ok",
      commands: 2,
      exitCode: 0,
      replyChars: "secret reply words\nMEDIA:/workspace/missing.png".length,
      delivery: "delivered",
      deliveries: [
        { kind: "text", outcome: "sent" },
        { kind: "file", outcome: "unreachable" },
      ],
    });
    expect(turns[0]!.durationMs).toBeTypeOf("number");
    expect(turns[0]!.queuedMs).toBeTypeOf("number");
    const debug = entries().filter((e) => e.level === 20);
    expect(debug.find((e) => e.msg === "text reply delivery attempt ended")).toMatchObject({
      chars: "secret reply words\nMEDIA:/workspace/missing.png".length,
      textOutcome: "sent",
    });
    for (const line of [...info, ...debug].map((e) => JSON.stringify(e))) {
      expect(line).not.toContain("private words");
      expect(line).not.toContain("secret reply");
    }
  });

  it("a step that throws is logged by name with its profile, and the chat gets the generic notice", async () => {
    const runtime = testRuntime(echoAgent([]), []);
    const broken: PipelineRuntime = {
      ...runtime,
      store: {
        ...runtime.store,
        currentSessionId: () => Promise.reject(new Error("state read failed")),
      },
    };
    const channel = new RecordingChannel();
    const { log, entries } = capturedLog();
    const ctx = testContext(broken, testServices(), channel, "hello");
    const { id } = await journal.record(ctx.message);
    await handleMessage({ ...ctx, entryId: id, log });
    const failure = entries().find((e) => e.level === 50);
    expect(failure).toMatchObject({
      msg: 'pipeline step "bindSession" failed',
      step: "bindSession",
      profile: "t",
      err: { message: "state read failed" },
    });
    expect(channel.said).toEqual([TurnFailedText]);
    expect((await journal.entryState(id))?.outcome).toBe("failed");
  });

  it("a turn whose first command's start meets an unreachable PostgreSQL keeps its message", async () => {
    // A `pg_ctl restart` as the turn records its first command's start (journal.started,
    // through the tool runner): the message waits for the database, it is not failed.
    const unreachable = new StorageError({
      operation: "started",
      path: "PostgreSQL 127.0.0.1:5432/mg",
      reason: "the server is not reachable",
      cause: new PostgresStoreError(
        "started",
        "127.0.0.1:5432/mg",
        Object.assign(new Error("terminating connection due to administrator command"), {
          code: "57P01",
        }),
      ),
    });
    const downJournal = new Proxy(journal, {
      get(target, key) {
        if (key === "started") return () => Promise.reject(unreachable);
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const kept: number[] = [];
    const calls: string[] = [];
    const agent: Agent = {
      kind: "shell",
      async runTurn(input) {
        const result = await input.tools.run("echo hi");
        return { reply: result.stdout };
      },
    };
    const recording = testRuntime(agent, calls);
    // As the real sandbox does: the turn's start is recorded before the command runs.
    const runtime: PipelineRuntime = {
      ...recording,
      sandbox: {
        ...recording.sandbox,
        run: async (slot, sessionKey, command, options) => {
          await options?.beforeCommand?.();
          return recording.sandbox.run(slot, sessionKey, command, options);
        },
      },
    };
    const services = {
      ...testServices(),
      journal: downJournal,
      keep: (turn: { entryId: number }) => void kept.push(turn.entryId),
    };
    const channel = new RecordingChannel();
    const ctx = testContext(runtime, services, channel, "echo hi");
    const { id } = await journal.record(ctx.message);
    await handleMessage({ ...ctx, entryId: id });
    expect(channel.said).toEqual([StoreDownText]);
    expect(kept).toEqual([id]);
    expect(calls.filter((call) => call.startsWith("run "))).toEqual([]);
    expect((await journal.entryState(id))?.outcome ?? null).toBeNull();
  });

  it("a failure binding the queued turn is logged as enqueueTurn, with a turn line", async () => {
    const runtime = testRuntime(echoAgent([]), []);
    let reads = 0;
    const flaky: PipelineRuntime = {
      ...runtime,
      store: {
        ...runtime.store,
        // The first read (binding the session) works; a /reset rotates an id after it, so the
        // turn reads its id again, and that read fails.
        currentSessionId: (key) =>
          ++reads === 1
            ? runtime.store.currentSessionId(key)
            : Promise.reject(new Error("state read failed")),
        get rotations() {
          return reads;
        },
      },
    };
    const channel = new RecordingChannel();
    const { log, entries } = capturedLog();
    await handleMessage({ ...testContext(flaky, testServices(), channel, "hello"), log });
    expect(entries().find((e) => e.level === 50)).toMatchObject({
      msg: 'pipeline step "enqueueTurn" failed',
      sessionKey: "agent:t:telegram:dm:1",
    });
    expect(entries().find((e) => e.msg === "turn finished")).toMatchObject({
      exit: "error",
      step: "enqueueTurn",
    });
    expect(channel.said).toEqual([TurnFailedText]);
  });

  it("a delivery step that throws is logged as sendReply in the turn's line; the chat is told", async () => {
    const services = testServices();
    // Our own Journal interface, with recording a reply failing (a broken disk, say).
    const failingJournal = new Proxy(journal, {
      get(target, key) {
        if (key === "addReply") return () => Promise.reject(new Error("disk I/O error"));
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const outbox = new Outbox({
      journal: failingJournal,
      logger: silentLogger(),
      channelFor: () => wired.channel,
      translateContextFor: () => wired.runtime?.translateContext,
    });
    const channel = new RecordingChannel();
    const { log, entries } = capturedLog();
    const runtime = testRuntime(echoAgent([]), []);
    const ctx = testContext(runtime, { ...services, outbox }, channel, "hello");
    await handleMessage({ ...ctx, log });
    expect(entries().find((e) => e.level === 50)).toMatchObject({
      msg: 'pipeline step "sendReply" failed',
      step: "sendReply",
      sessionKey: "agent:t:telegram:dm:1",
      err: { message: "disk I/O error" },
    });
    expect(entries().find((e) => e.msg === "turn finished")).toMatchObject({
      exit: "error",
      step: "sendReply",
      reason: "disk I/O error",
    });
    expect(channel.texts).toEqual([DeliveryFailedText]);
    expect(channel.replies).toEqual([]);
  });

  it("a turn stopped by /stop is logged as stopped", async () => {
    const services = testServices();
    let started!: () => void;
    const running = new Promise<void>((r) => {
      started = r;
    });
    const agent: Agent = {
      kind: "shell",
      runTurn: (input) =>
        new Promise((_resolve, reject) => {
          started();
          input.signal.addEventListener("abort", () => reject(new Error("aborted")));
        }),
    };
    const runtime = testRuntime(agent, []);
    const channel = new RecordingChannel();
    const { log, entries } = capturedLog();
    const turn = handleMessage({ ...testContext(runtime, services, channel, "sleep 9"), log });
    await running;
    await handleMessage(testContext(runtime, services, channel, "/stop", "1"));
    await turn;
    expect(entries().find((e) => e.msg === "turn finished")).toMatchObject({ exit: "stopped" });
  });
});

/** A channel that also records the status reactions it is asked for (our own interface). */
class ReactingChannel extends RecordingChannel {
  /** The last status of each message id (`none`: removed). */
  readonly shown = new Map<string, string>();
  readonly reactions: StatusReactions = {
    set: async (_target, messageId, status) => {
      this.shown.set(messageId, status ?? "none");
    },
  };
}

/** An agent whose first turn waits until `release` is called; every turn echoes. */
function heldAgent() {
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let started!: () => void;
  const first = new Promise<void>((resolve) => {
    started = resolve;
  });
  let turns = 0;
  const agent: Agent = {
    kind: "shell",
    async runTurn(input) {
      if (turns++ === 0) {
        started();
        await Promise.race([
          released,
          new Promise((_resolve, reject) =>
            input.signal.addEventListener("abort", () => reject(new Error("aborted"))),
          ),
        ]);
      }
      return { reply: `ran: ${input.text}` };
    },
  };
  return { agent, release, first };
}

describe("status reactions", () => {
  it("messages collected into one turn end with it: all done together", async () => {
    const services = testServices();
    const { agent, release, first } = heldAgent();
    const runtime = testRuntime(
      agent,
      [],
      testProfile({ busyMode: "collect", reactions: { afterMs: 0 } }),
    );
    const channel = new ReactingChannel();
    const [a, b, c] = ["one", "two", "three"].map((text) =>
      testContext(runtime, services, channel, text, "1"),
    );
    const running = handleMessage(a!);
    await first;
    const collected = [handleMessage(b!), handleMessage(c!)];
    await waitFor(() => expect(channel.shown.get(c!.message.messageId)).toBe("seen"));
    release();
    await Promise.all([running, ...collected]);
    await waitFor(() =>
      expect([a, b, c].map((ctx) => channel.shown.get(ctx!.message.messageId))).toEqual([
        "done",
        "done",
        "done",
      ]),
    );
    expect(channel.replies.map((r) => r.text)).toEqual(["ran: one", "ran: two\nthree"]);
  });

  it("/stop takes the reactions off the stopped turn and the message it dropped", async () => {
    const services = testServices();
    const { agent, first } = heldAgent();
    const runtime = testRuntime(
      agent,
      [],
      testProfile({ sandbox: { persistent: false }, reactions: { afterMs: 0 } }),
    );
    const channel = new ReactingChannel();
    const turn = testContext(runtime, services, channel, "sleep 1000", "1");
    const queued = testContext(runtime, services, channel, "echo later", "1");
    const done = [handleMessage(turn), handleMessage(queued)];
    await first;
    await waitFor(() => expect(channel.shown.get(turn.message.messageId)).toBe("working"));
    await handleMessage(testContext(runtime, services, channel, "/stop", "1"));
    await Promise.all(done);
    await waitFor(() =>
      expect([turn, queued].map((ctx) => channel.shown.get(ctx.message.messageId))).toEqual([
        "none",
        "none",
      ]),
    );
  });

  it("shows none in a group unless reactions.groups, and none when turned off", async () => {
    const cases: [Record<string, unknown>, InboundMessage["chatType"], boolean][] = [
      [{}, "group", false],
      [{ reactions: { groups: true, afterMs: 0 } }, "group", true],
      [{ reactions: { enabled: false, afterMs: 0 } }, "dm", false],
      [{ reactions: { afterMs: 0 } }, "dm", true],
    ];
    for (const [settings, chatType, reacts] of cases) {
      const runtime = testRuntime(echoAgent([]), [], testProfile(settings));
      const channel = new ReactingChannel();
      const ctx = testContext(runtime, testServices(), channel, "hi", "2", chatType);
      await handleMessage(ctx);
      if (reacts) {
        await waitFor(() => expect(channel.shown.get(ctx.message.messageId)).toBe("done"));
      } else expect(channel.shown.size).toBe(0);
    }
  });

  it("a message answered within reactions.afterMs gets none, unless its turn failed", async () => {
    const channel = new ReactingChannel();
    const quick = testRuntime(echoAgent([]), [], testProfile({ reactions: { afterMs: 60_000 } }));
    const answered = testContext(quick, testServices(), channel, "hi", "2");
    await handleMessage(answered);
    const failing: Agent = {
      kind: "shell",
      async runTurn() {
        throw new Error("the agent broke");
      },
    };
    const broken = testRuntime(failing, [], testProfile({ reactions: { afterMs: 60_000 } }));
    const failed = testContext(broken, testServices(), channel, "hi", "2");
    await handleMessage(failed);
    await waitFor(() => expect(channel.shown.get(failed.message.messageId)).toBe("failed"));
    expect(channel.shown.has(answered.message.messageId)).toBe(false);
    expect(channel.replies.map((r) => r.text)).toContain("you said: hi");
  });

  it("a turn still running after reactions.afterMs shows working, then done", async () => {
    const { agent, release, first } = heldAgent();
    const runtime = testRuntime(agent, [], testProfile({ reactions: { afterMs: 20 } }));
    const channel = new ReactingChannel();
    const ctx = testContext(runtime, testServices(), channel, "slow", "1");
    const running = handleMessage(ctx);
    await first;
    await waitFor(() => expect(channel.shown.get(ctx.message.messageId)).toBe("working"));
    release();
    await running;
    await waitFor(() => expect(channel.shown.get(ctx.message.messageId)).toBe("done"));
  });
});

/**
 * Session leases that let every turn run here, except that the next acquire after
 * `sendBack()` answers {@link RunLater} (an older message of the session runs first,
 * docs/cluster.md): the turn goes back into its session's queue.
 */
function leasesSendingBack(): SessionHold & { sendBack(): void } {
  let sendBack = false;
  return {
    sendBack: () => {
      sendBack = true;
    },
    acquire: async () => {
      if (!sendBack) return true;
      sendBack = false;
      return RunLater;
    },
    giveBack: () => {},
    queued: () => {},
    askHolder: async () => undefined,
    askEveryReplica: async () => [],
    dropWaiting: async () => 0,
  };
}

describe("busy sessions, /stop and /reset racing a turn", () => {
  it("a collected turn sent back behind an older message runs each message once", async () => {
    const seen: string[] = [];
    const { agent, release, first } = heldAgent();
    const recording: Agent = {
      kind: "shell",
      runTurn: (input) => {
        seen.push(input.text);
        return agent.runTurn(input);
      },
    };
    const hold = leasesSendingBack();
    const services = { ...testServices(), sessions: hold };
    const runtime = testRuntime(recording, [], testProfile({ busyMode: "collect" }));
    const channel = new RecordingChannel();
    const running = handleMessage(testContext(runtime, services, channel, "one", "2"));
    await first;
    const collected = ["two", "three"].map((text) =>
      handleMessage(testContext(runtime, services, channel, text, "2")),
    );
    await waitFor(() =>
      expect(channel.texts).toEqual([
        "⏳ queued for the next turn",
        "⏳ queued — 2 messages go in the next turn together",
      ]),
    );
    // The collected turn's first acquire finds an older message to run first: it goes back.
    hold.sendBack();
    release();
    await Promise.all([running, ...collected]);
    expect(seen).toEqual(["one", "two\nthree"]);
    expect(channel.replies.map((r) => r.text)).toEqual(["ran: one", "ran: two\nthree"]);
  });

  it("/reset drops the session's messages waiting in the journal for this replica, as /stop does", async () => {
    // docs/cluster.md: a message handed to this replica and not picked up yet waits in the
    // journal, not in the queue; /stop closes it (dropWaiting), and /reset does all /stop does.
    const dropped: string[] = [];
    const hold: SessionHold = {
      ...leasesSendingBack(),
      dropWaiting: async (sessions) => {
        for (const session of sessions) dropped.push(session.sessionKey);
        return 1;
      },
    };
    const calls: string[] = [];
    const services = { ...testServices(), sessions: hold };
    const runtime = testRuntime(
      echoAgent([]),
      calls,
      testProfile({ sandbox: { persistent: false } }),
    );
    const channel = new RecordingChannel();
    await handleMessage(testContext(runtime, services, channel, "/reset", "1"));
    expect(calls).toContain("rotateSessionId agent:t:telegram:dm:1");
    expect(dropped).toEqual(["agent:t:telegram:dm:1"]);
    expect(channel.said).toEqual([
      "♻️ Reset: new conversation started, removed the container and its files. 🛑 Stopped: dropped 1 queued message(s).",
    ]);
  });

  it("/stop all drops the slot's sessions' messages waiting in the journal for this replica", async () => {
    // docs/sessions.md: `/stop all` is everything `/stop` does for every session on the
    // container, and /stop closes the messages waiting in the journal for this replica
    // (docs/cluster.md: handed to it and not picked up yet). User 2's session ran here before;
    // a message of theirs now waits in the journal, handed to this replica.
    // One call for the lot: with replicas each call reads the journal's open entries.
    const dropped: string[][] = [];
    const hold: SessionHold = {
      ...leasesSendingBack(),
      dropWaiting: async (sessions) => {
        dropped.push(sessions.map((session) => `${session.profile} ${session.sessionKey}`));
        return sessions.some((session) => session.sessionKey === "agent:t:telegram:dm:2") ? 1 : 0;
      },
    };
    const services = { ...testServices(), sessions: hold };
    const runtime = testRuntime(echoAgent([]), []);
    const channel = new RecordingChannel();
    await handleMessage(testContext(runtime, services, channel, "echo hi", "2"));
    await handleMessage(testContext(runtime, services, channel, "/stop all", "1"));
    expect(dropped.map((call) => call.sort())).toEqual([
      ["t agent:t:telegram:dm:1", "t agent:t:telegram:dm:2"],
    ]);
    expect(channel.said.at(-1)).toBe(
      "🛑 Stopped everything in slot profile:t: killed 7 process(es), dropped 1 queued message(s).",
    );
  });

  it("/stop while the answered turn says its notices aborts it: its reply is not delivered", async () => {
    // The agent answered with a notice (a voice note it could not transcribe, say); /stop
    // comes while that notice is being sent, before the reply went to the outbox.
    const sending = latch();
    const release = latch();
    class SlowNotice extends RecordingChannel {
      override async sendText(target: ChatTarget, text: string): Promise<void> {
        await super.sendText(target, text);
        if (text !== "a notice") return;
        sending.open();
        await release.opened;
      }
    }
    const agent: Agent = {
      kind: "shell",
      runTurn: async () => ({ reply: "the answer", notices: ["a notice"] }),
    };
    const services = testServices();
    const runtime = testRuntime(agent, []);
    const channel = new SlowNotice();
    const turn = handleMessage(testContext(runtime, services, channel, "hi", "1"));
    await sending.opened;
    await handleMessage(testContext(runtime, services, channel, "/stop", "1"));
    release.open();
    await turn;
    expect(channel.said).toEqual(["a notice", "🛑 Stopped: aborted the running turn."]);
  });

  it("/stop while the turn's reply is being recorded does not claim to abort it", async () => {
    // The reply is on its way to the outbox (docs/sessions.md: the turn no longer counts);
    // it goes out, so /stop must not tell the chat it aborted the turn.
    const held = replyHeldOutbox();
    const services = { ...testServices(), outbox: held.outbox };
    const runtime = testRuntime(echoAgent([]), []);
    const channel = new RecordingChannel();
    const turn = handleMessage(testContext(runtime, services, channel, "hi", "1"));
    await held.recording.opened;
    await handleMessage(testContext(runtime, services, channel, "/stop", "1"));
    held.release.open();
    await turn;
    expect(channel.said).toEqual(["Nothing was running for this session.", "you said: hi"]);
  });

  /** An agent whose reply names a file of the session's workspace. */
  const reportAgent: Agent = {
    kind: "shell",
    runTurn: async () => ({ reply: "here it is MEDIA:/workspace/report.txt" }),
  };

  /**
   * `base` with a slot dir of its own holding `workspace/report.txt`, which the sandbox's
   * cleanup removes with the container, as the real one's `deleteDirs` does; `removals` are
   * those cleanups.
   */
  async function reportInSlotDir(base: PipelineRuntime) {
    const slotDir = await mkdtemp(join(tmpdir(), "mg-stop-files-"));
    onTestFinished(() => rm(slotDir, { recursive: true, force: true }));
    await mkdir(join(slotDir, "workspace"));
    await writeFile(join(slotDir, "workspace", "report.txt"), "the report");
    const removals: Promise<void>[] = [];
    const runtime: PipelineRuntime = {
      ...base,
      sandbox: {
        ...base.sandbox,
        cleanup: (slot, options) => {
          const removal = base.sandbox
            .cleanup(slot, options)
            .then(() => rm(slotDir, { recursive: true, force: true }));
          removals.push(removal);
          return removal;
        },
      },
      translateContext: () => ({
        backend: "docker",
        slotDirs: [slotDir],
        volumes: [],
        allowDirs: [],
        protectedHomes: [],
        tmpDir: tmpdir(),
      }),
    };
    return { runtime, removals, slotDir };
  }

  it.each([
    ["/stop", "🛑 Stopped: removed the session's container."],
    ["/reset", "♻️ Reset: new conversation started, removed the container and its files."],
  ])(
    "%s keeps a per-session container's files until the answered reply naming them was delivered",
    async (command, answer) => {
      // The reply names a file of the session's workspace; /stop comes while the reply is being
      // recorded, before the outbox opened the file. The container and its dir are removed only
      // once that delivery attempt ended: the file goes out, and /stop's answer after the reply.
      const calls: string[] = [];
      const { runtime, removals, slotDir } = await reportInSlotDir(
        testRuntime(reportAgent, calls, testProfile({ sandbox: { persistent: false } })),
      );
      const held = replyHeldOutbox();
      const services = { ...testServices(), outbox: held.outbox };
      const channel = new RecordingChannel();
      const turn = handleMessage(testContext(runtime, services, channel, "the report", "1"));
      await held.recording.opened;
      const stop = handleMessage(testContext(runtime, services, channel, command, "1"));
      // /stop killed the session's processes (/reset rotated the session's id) at once; a
      // removal it went on to is let finish before the reply's recording does.
      await waitFor(() =>
        expect(calls).toContain(
          command === "/stop"
            ? "killSession agent:t:telegram:dm:1"
            : "rotateSessionId agent:t:telegram:dm:1",
        ),
      );
      await tick();
      await Promise.all(removals);
      held.release.open();
      await Promise.all([turn, stop]);
      expect(channel.replies.map((reply) => [reply.text, reply.files])).toEqual([
        ["here it is", ["report.txt"]],
        [answer, []],
      ]);
      expect(channel.said).toHaveLength(2);
      expect(calls.filter((call) => call.startsWith("cleanup"))).toHaveLength(1);
      await expect(stat(slotDir)).rejects.toThrow(/ENOENT/);
    },
  );

  it("/stop removes the container after deliveryWaitMs when the reply on its way is held up longer", async () => {
    // A delivery attempt held up (a platform's long rate limit, say) must not hold /stop, nor a
    // replica's round acting on another replica's /stop: past the bound the container goes.
    const calls: string[] = [];
    const { runtime, removals } = await reportInSlotDir(
      testRuntime(reportAgent, calls, testProfile({ sandbox: { persistent: false } })),
    );
    const held = replyHeldOutbox();
    const services = { ...testServices(), outbox: held.outbox, deliveryWaitMs: 0 };
    const channel = new RecordingChannel();
    const turn = handleMessage(testContext(runtime, services, channel, "the report", "1"));
    await held.recording.opened;
    await handleMessage(testContext(runtime, services, channel, "/stop", "1"));
    await Promise.all(removals);
    expect(calls.filter((call) => call.startsWith("cleanup"))).toHaveLength(1);
    expect(channel.said).toEqual(["🛑 Stopped: removed the session's container."]);
    held.release.open();
    await turn;
  });

  it("/reset confirm keeps a shared container's files until another session's answered reply was delivered", async () => {
    // User 2's reply names a file of the profile's one container; the admin resets that
    // container while the reply is being recorded, before the outbox opened the file.
    const calls: string[] = [];
    const { runtime, removals, slotDir } = await reportInSlotDir(testRuntime(reportAgent, calls));
    const held = replyHeldOutbox();
    const services = { ...testServices(), outbox: held.outbox };
    const channel = new RecordingChannel();
    const turn = handleMessage(testContext(runtime, services, channel, "the report", "2"));
    await held.recording.opened;
    const reset = handleMessage(testContext(runtime, services, channel, "/reset confirm", "1"));
    await waitFor(() => expect(calls).toContain("rotateSessionId agent:t:telegram:dm:1"));
    await tick();
    await Promise.all(removals);
    held.release.open();
    await Promise.all([turn, reset]);
    expect(channel.replies[0]).toMatchObject({ text: "here it is", files: ["report.txt"] });
    expect(calls.filter((call) => call.startsWith("cleanup"))).toHaveLength(1);
    await expect(stat(slotDir)).rejects.toThrow(/ENOENT/);
  });

  it("interrupt: a message recovered from the journal waits for the recovered turn before it", async () => {
    // Both were accepted before a restart, which runs them in their order (docs/durability.md):
    // the second must not stop the first, whose chat would get neither its reply nor a word.
    const calls: string[] = [];
    const started: string[] = [];
    const firstRunning = latch();
    const release = latch();
    const agent: Agent = {
      kind: "shell",
      async runTurn(input) {
        started.push(input.text);
        if (input.text === "first") {
          firstRunning.open();
          await new Promise<void>((resolve, reject) => {
            void release.opened.then(resolve);
            input.signal.addEventListener("abort", () => reject(new Error("aborted")));
          });
        }
        return { reply: input.text };
      },
    };
    const services = testServices();
    const runtime = testRuntime(agent, calls, testProfile({ busyMode: "interrupt" }));
    const channel = new RecordingChannel();
    const recovered = (text: string): MessageContext => ({
      ...testContext(runtime, services, channel, text, "2"),
      recovered: true,
    });
    const first = handleMessage(recovered("first"));
    await firstRunning.opened;
    const second = handleMessage(recovered("second"));
    const key = "agent:t:telegram:dm:2";
    await waitFor(() =>
      expect(services.queue.queued(key) === 1 || started.includes("second")).toBe(true),
    );
    release.open();
    await Promise.all([first, second]);
    expect(channel.said).toEqual(["first", "second"]);
    expect(calls).not.toContain(`killSession ${key}`);
  });

  it("interrupt: a message handed over by another replica stops the running turn as one just sent", async () => {
    // Handed over just after another replica received it (docs/cluster.md): a new message.
    const calls: string[] = [];
    const { agent, started, firstRunning } = stoppableAgent();
    const services = testServices();
    const runtime = testRuntime(agent, calls, testProfile({ busyMode: "interrupt" }));
    const channel = new RecordingChannel();
    const first = handleMessage(testContext(runtime, services, channel, "first", "2"));
    await firstRunning;
    await handleMessage({
      ...testContext(runtime, services, channel, "second", "2"),
      recovered: true,
      handed: true,
    });
    await first;
    expect(started.map((input) => input.text)).toEqual(["first", "second"]);
    expect(channel.said).toEqual([InterruptedTurnText, "ran after /stop all"]);
    expect(calls).toContain("killSession agent:t:telegram:dm:2");
  });

  it("/stop all after /reset confirm still stops the other sessions' turns and queues on the slot", async () => {
    // The profile's one container, shared: user 2's turn runs and another message of theirs
    // waits behind it while the admin resets the container, then stops everything on it.
    const services = testServices();
    const calls: string[] = [];
    const { agent, started, firstRunning } = stoppableAgent();
    const runtime = testRuntime(agent, calls);
    const channel = new RecordingChannel();
    const turns = [
      handleMessage(testContext(runtime, services, channel, "sleep 1000", "2")),
      handleMessage(testContext(runtime, services, channel, "echo later", "2")),
    ];
    await firstRunning;
    await handleMessage(testContext(runtime, services, channel, "/reset confirm", "1"));
    await handleMessage(testContext(runtime, services, channel, "/stop all", "1"));
    const stopped = channel.said.at(-1);
    // Whatever the assertion says, user 2's turn must end for the test to.
    services.queue.abortAll(new Error("test over"));
    await Promise.all(turns);
    expect(stopped).toBe(
      "🛑 Stopped everything in slot profile:t: killed 7 process(es), aborted 1 running turn(s), dropped 1 queued message(s).",
    );
    expect(started.map((input) => input.text)).toEqual(["sleep 1000"]);
  });
});

describe("pairing checked again when a turn starts", () => {
  /** A pairing profile whose store answers `isPaired` from `paired`. */
  function pairingRuntime(agent: Agent, paired: Set<string>, overrides = {}): PipelineRuntime {
    const runtime = testRuntime(agent, [], testProfile({ access: "pairing", ...overrides }));
    return { ...runtime, store: { ...runtime.store, isPaired: async (user) => paired.has(user) } };
  }

  it("does not run a revoked user's message that waited", async () => {
    const services = testServices();
    const { agent, release, first } = heldAgent();
    const paired = new Set(["telegram:3"]);
    const runtime = pairingRuntime(agent, paired);
    const channel = new RecordingChannel();
    const running = handleMessage(testContext(runtime, services, channel, "one", "3"));
    await first;
    const waiting = handleMessage(testContext(runtime, services, channel, "two", "3"));
    paired.delete("telegram:3");
    release();
    await Promise.all([running, waiting]);
    expect(channel.replies.map((r) => r.text)).toEqual(["ran: one", RevokedWhileQueuedText]);
  });

  it("runs a collected turn whole: another member's message is never dropped with a revoked one's", async () => {
    const services = testServices();
    const { agent, release, first } = heldAgent();
    const paired = new Set(["telegram:3", "telegram:4"]);
    const runtime = pairingRuntime(agent, paired, {
      busyMode: "collect",
      groupSessionsPerUser: false,
    });
    const channel = new RecordingChannel();
    const [a, b, c] = [
      ["one", "1"],
      ["two", "3"],
      ["three", "4"],
    ].map(([text, user]) => testContext(runtime, services, channel, text!, user, "group"));
    const running = handleMessage(a!);
    await first;
    const collected = [handleMessage(b!), handleMessage(c!)];
    // The collected turn's first message is the revoked user's: the other's came with it.
    paired.delete("telegram:3");
    release();
    await Promise.all([running, ...collected]);
    expect(channel.replies.map((r) => r.text)).toEqual(["ran: one", "ran: two\nthree"]);
  });
});
