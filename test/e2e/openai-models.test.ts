import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type ModelSettings,
  OpenAIAgent,
  type OpenAIAgentOptions,
  OpenAIEndpointError,
  SqliteStateStore,
  type StateStore,
  stateDbPath,
  usageDays,
} from "@mediagate/gateway";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  FakeOpenAIServer,
  type FakeProvider,
  type FakeUsage,
  LocalToolRunner,
  reply,
} from "../fakes/openai/index.js";
import { waitUntil } from "./harness/gateway-home.js";

const SessionKey = "agent:default:telegram:dm:42";
const User = "telegram:42";
/** 20:00 UTC: the daily budget resets 4 hours later. */
const Evening = Date.parse("2026-12-03T20:00:00Z");

let dir: string;
let main: FakeOpenAIServer;
let backup: FakeOpenAIServer;
let store: StateStore;
let runner: LocalToolRunner;
let nowMs: number;
let sleeps: number[];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "mediagate-models-e2e-"));
  mkdirSync(join(dir, "workspace"));
  main = await FakeOpenAIServer.start({ models: ["main-model"] });
  backup = await FakeOpenAIServer.start({ models: ["backup-model"] });
  nowMs = Evening;
  store = await SqliteStateStore.open(stateDbPath(dir), { now: () => nowMs });
  runner = new LocalToolRunner(join(dir, "workspace"));
  sleeps = [];
});

afterEach(async () => {
  await main.close();
  await backup.close();
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function models(overrides: Partial<ModelSettings> = {}): ModelSettings[] {
  return [
    {
      name: "main",
      baseUrl: main.baseUrl,
      model: "main-model",
      prices: { input: 2, output: 8, cachedInput: 0.5 },
      ...overrides,
    },
    {
      name: "backup",
      baseUrl: backup.baseUrl,
      model: "backup-model",
      prices: { input: 1, output: 4 },
    },
  ];
}

function makeAgent(options: Partial<OpenAIAgentOptions> = {}): OpenAIAgent {
  return new OpenAIAgent({
    models: models(),
    fallback: ["backup"],
    store,
    logger: pino({ level: "silent" }),
    maxRetries: 2,
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    ...options,
  });
}

async function turn(
  agent: OpenAIAgent,
  text: string,
  sessionKey = SessionKey,
  onText?: (piece: string) => void,
) {
  return agent.runTurn({
    ...(onText === undefined ? {} : { onText }),
    text,
    profile: "default",
    sessionKey,
    user: User,
    sessionId: await store.currentSessionId(sessionKey),
    tools: runner,
    signal: new AbortController().signal,
    attachments: [],
  });
}

function profileTotals() {
  return store.usagePeriods({ kind: "profile" }, usageDays(nowMs, 7));
}

describe("model fallback", () => {
  it("moves to the next model on a 5xx, stays on it for the turn, and says so once", async () => {
    main.enqueue(reply.error(503, "overloaded"));
    backup.enqueue(reply.toolCall("terminal", { command: "echo hi" }), reply.text("done"));

    const result = await turn(makeAgent(), "do it");

    expect(result.reply).toBe("done");
    expect(result.notices).toEqual(["↪️ Answered by backup: main answered HTTP 503."]);
    expect(main.requests).toHaveLength(1);
    expect(backup.requests.map((request) => request.body.model)).toEqual([
      "backup-model",
      "backup-model",
    ]);
    expect(sleeps).toEqual([]);
  });

  it("says it once per turn even when a second fallback answers later in the turn", async () => {
    const third = await FakeOpenAIServer.start();
    try {
      main.enqueue(reply.error(500));
      backup.enqueue(reply.toolCall("terminal", { command: "echo hi" }), reply.error(503));
      third.enqueue(reply.text("third answered"));
      const agent = makeAgent({
        models: [...models(), { name: "third", baseUrl: third.baseUrl, model: "third-model" }],
        fallback: ["backup", "third"],
        maxRetries: 0,
      });

      const result = await turn(agent, "work");

      expect(result.reply).toBe("third answered");
      expect(result.notices).toEqual(["↪️ Answered by backup: main answered HTTP 500."]);
      expect([main.requests.length, backup.requests.length, third.requests.length]).toEqual([
        1, 2, 1,
      ]);
    } finally {
      await third.close();
    }
  });

  it("moves on at a 429 whose retry-after is past the bound, without waiting for it", async () => {
    main.enqueue(reply.rateLimited(60_000));
    backup.enqueue(reply.text("from backup"));

    const result = await turn(makeAgent(), "hello");

    expect(result.reply).toBe("from backup");
    expect(result.notices).toEqual(["↪️ Answered by backup: main answered HTTP 429."]);
    expect(sleeps).toEqual([]);
  });

  it("waits out a short 429 on the same model: no fallback, no notice", async () => {
    main.enqueue(reply.rateLimited(5), reply.text("after the wait"));

    const result = await turn(makeAgent(), "hello");

    expect(result.reply).toBe("after the wait");
    expect(result.notices).toBeUndefined();
    expect(main.requests).toHaveLength(2);
    expect(backup.requests).toHaveLength(0);
    expect(sleeps).toEqual([5]);
  });

  it("moves on when the model does not answer in time", async () => {
    main.enqueue(reply.hang());
    backup.enqueue(reply.text("in time"));

    const result = await turn(makeAgent({ models: models({ timeoutMs: 300 }) }), "hello");

    expect(result.reply).toBe("in time");
    expect(result.notices).toEqual(["↪️ Answered by backup: main did not answer in time."]);
    expect(main.requests[0]?.clientAborted).toBe(true);
  });

  it("retries the last model of the chain, then fails the turn with its error", async () => {
    main.enqueue(reply.error(500));
    backup.enqueue(reply.error(502), reply.error(502), reply.error(502));

    await expect(turn(makeAgent(), "hello")).rejects.toMatchObject({
      name: "OpenAIEndpointError",
      status: 502,
      model: "backup-model",
    });
    expect(main.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(3);
    expect(sleeps).toHaveLength(2);
  });

  it("does not fall back on a 400: the next model would refuse the request too", async () => {
    main.enqueue(reply.error(400, "bad request"));

    await expect(turn(makeAgent(), "hello")).rejects.toBeInstanceOf(OpenAIEndpointError);
    expect(backup.requests).toHaveLength(0);
  });

  it("streams only the answer that counts when the first model fails before any text", async () => {
    main.enqueue(reply.error(503, "overloaded"));
    backup.enqueue(reply.text("from the backup", { stream: { chunkChars: 4 } }));
    const pieces: string[] = [];

    const result = await turn(makeAgent(), "hello", SessionKey, (piece) => pieces.push(piece));

    expect(pieces.join("")).toBe("from the backup");
    expect(result.notices).toEqual(["↪️ Answered by backup: main answered HTTP 503."]);
    expect((await profileTotals()).all).toMatchObject({
      calls: 1,
      inputTokens: backup.reportedUsage().promptTokens,
    });
  });

  it("fails the turn, without retry or fallback, when the stream breaks after its first text", async () => {
    // A stream that ends without a finish reason: the SDK refuses the answer after "Half an".
    const chunk = {
      id: "chatcmpl-cut",
      object: "chat.completion.chunk",
      created: 0,
      model: "main-model",
      choices: [
        { index: 0, delta: { role: "assistant", content: "Half an" }, finish_reason: null },
      ],
    };
    main.enqueue(
      reply.raw(200, `data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`, "text/event-stream"),
    );
    backup.enqueue(reply.text("a second answer"));
    const pieces: string[] = [];

    await expect(
      turn(makeAgent(), "hello", SessionKey, (piece) => pieces.push(piece)),
    ).rejects.toMatchObject({ name: "OpenAIEndpointError", kind: "bad_response" });
    expect(pieces.join("")).toBe("Half an");
    expect(main.requests).toHaveLength(1);
    expect(backup.requests).toHaveLength(0);
    expect(sleeps).toEqual([]);
  });

  it("fails the turn when a stream stalls after its first text for the model's timeout", async () => {
    main.enqueue(reply.text("Half an answer", { stream: { chunkChars: 4, hangAfterChars: 4 } }));
    backup.enqueue(reply.text("a second answer"));
    const pieces: string[] = [];

    await expect(
      turn(makeAgent({ models: models({ timeoutMs: 300 }) }), "hello", SessionKey, (piece) =>
        pieces.push(piece),
      ),
    ).rejects.toMatchObject({ name: "OpenAIEndpointError", kind: "timeout" });
    expect(pieces.join("")).toBe("Half");
    await waitUntil(() => main.requests[0]?.clientAborted === true, "the stalled stream dropped");
    expect(backup.requests).toHaveLength(0);
  });

  it("keeps a stream that takes longer than the timeout but never pauses that long", async () => {
    // Eight chunks 100 ms apart: 700 ms in all against a 300 ms timeout, re-armed by each.
    main.enqueue(
      reply.text("Slow and steady wins, every time.", { stream: { chunkChars: 4, everyMs: 100 } }),
    );
    const pieces: string[] = [];

    const result = await turn(
      makeAgent({ models: models({ timeoutMs: 300 }) }),
      "hello",
      SessionKey,
      (piece) => pieces.push(piece),
    );
    expect(result.reply).toBe("Slow and steady wins, every time.");
    expect(pieces.length).toBeGreaterThanOrEqual(8);
    expect(main.requests[0]?.clientAborted).toBe(false);
    expect(backup.requests).toHaveLength(0);
  });

  it("starts from the session's /model pick, the fallback after it", async () => {
    await store.setSessionModel(SessionKey, "backup");
    backup.enqueue(reply.text("picked"));

    const picked = await turn(makeAgent(), "hello");
    expect(picked.reply).toBe("picked");
    expect(picked.notices).toBeUndefined();
    expect(main.requests).toHaveLength(0);
    // another session still starts on the default
    main.enqueue(reply.text("default"));
    const other = await turn(makeAgent(), "hello", "agent:default:telegram:dm:43");
    expect(other.reply).toBe("default");
    expect(other.notices).toBeUndefined();
  });
});

describe("usage", () => {
  it("records every call: the totals equal the sum of what the endpoints reported", async () => {
    const agent = makeAgent();
    main.enqueue(
      reply.toolCall("write_file", { path: "/workspace/a.txt", content: "a" }),
      reply.text("first"),
      reply.text("second"),
      reply.error(503),
    );
    backup.enqueue(reply.toolCall("read_file", { path: "/workspace/a.txt" }), reply.text("third"));
    await turn(agent, "one");
    await turn(agent, "two");
    await turn(agent, "three");

    const fromMain = main.reportedUsage();
    const fromBackup = backup.reportedUsage();
    expect(fromMain.cachedTokens).toBeGreaterThan(0);
    const { all, today } = await profileTotals();
    expect(all).toEqual(today);
    expect(all).toMatchObject({
      calls: 5,
      inputTokens: fromMain.promptTokens + fromBackup.promptTokens,
      outputTokens: fromMain.completionTokens + fromBackup.completionTokens,
      cachedTokens: fromMain.cachedTokens + fromBackup.cachedTokens,
    });
    const cost = (usage: FakeUsage, input: number, cached: number, output: number) =>
      ((usage.promptTokens - usage.cachedTokens) * input +
        usage.cachedTokens * cached +
        usage.completionTokens * output) /
      1e6;
    expect(all.cost).toBeCloseTo(cost(fromMain, 2, 0.5, 8) + cost(fromBackup, 1, 1, 4), 12);
    const session = await store.usagePeriods(
      { kind: "session", sessionKey: SessionKey },
      usageDays(nowMs, 7),
    );
    expect(session.all).toEqual(all);
    expect(await store.usageByUser(usageDays(nowMs, 7))).toEqual([
      expect.objectContaining({ user: User, all }),
    ]);
  });

  it("keeps the records across a restart of the store", async () => {
    main.enqueue(reply.text("x"));
    await turn(makeAgent(), "one");
    await store.close();
    store = await SqliteStateStore.open(stateDbPath(dir), { now: () => nowMs });
    expect((await profileTotals()).all.calls).toBe(1);
  });
});

describe("daily budget", () => {
  const usage: FakeUsage = { promptTokens: 60, completionTokens: 40, cachedTokens: 0 };

  it("stops the 11th call of a 10-call budget with its message, until 00:00 UTC", async () => {
    main.respondWith(() => reply.text("ok", { usage }));
    const agent = makeAgent({ budget: { dailyTokens: 1000 } });
    for (let call = 1; call <= 10; call++)
      expect((await turn(agent, `call ${call}`)).reply).toBe("ok");

    const stopped = await turn(agent, "call 11");

    expect(stopped.reply).toBe(
      "⛔ This bot's daily model budget is used up (1000 of 1000 tokens today). It resets at 00:00 UTC, in 4 h 0 min; until then messages get no model answer.",
    );
    expect(main.requests).toHaveLength(10);
    expect((await profileTotals()).today.calls).toBe(10);
    // past midnight (UTC) the budget is fresh
    nowMs = Date.parse("2026-12-04T00:00:01Z");
    expect((await turn(agent, "next day")).reply).toBe("ok");
    expect(main.requests).toHaveLength(11);
  });

  it("ends a turn between tool rounds when the cost budget runs out in it", async () => {
    main.enqueue(
      reply.toolCall("terminal", { command: "echo one" }, { usage }),
      reply.text("never asked", { usage }),
    );
    // 60 input at 2 + 40 output at 8 per million: 0.00044 per call
    const agent = makeAgent({ budget: { dailyCost: 0.0004 } });

    const result = await turn(agent, "work");

    expect(result.reply).toMatch(
      /^⛔ This bot's daily model budget is used up \(cost 0\.0004 of 0\.0004 today\)/,
    );
    expect(main.requests).toHaveLength(1);
    expect(main.pending).toBe(1);
  });
});

describe("usage an endpoint reports", () => {
  it("keeps /usage and the budget working after answers claimed absurd token counts", async () => {
    // A broken or hostile endpoint claims 2^62 tokens a call: summed as integers, the totals
    // of two such calls overflow SQLite's 64 bits, and every report fails from then on.
    const absurd: FakeUsage = { promptTokens: 2 ** 62, completionTokens: 2 ** 62, cachedTokens: 0 };
    main.respondWith(() => reply.text("ok", { usage: absurd }));
    const agent = makeAgent();
    expect((await turn(agent, "one")).reply).toBe("ok");
    expect((await turn(agent, "two")).reply).toBe("ok");

    const totals = await profileTotals();
    expect(totals.all.calls).toBe(2);
    expect(Number.isFinite(totals.all.cost)).toBe(true);
    const budgeted = makeAgent({ budget: { dailyTokens: 1_000_000 } });
    expect((await turn(budgeted, "three")).reply).toMatch(
      /^⛔ This bot's daily model budget is used up/,
    );
    expect(main.requests).toHaveLength(2);
  });
});

describe("tool calls an endpoint sends", () => {
  it("keeps arguments that are not JSON out of the conversation a strict endpoint reads", async () => {
    // vLLM and Anthropic's and Google's compatible layers refuse a conversation whose earlier
    // tool call carries arguments that are not a JSON object: sent back as they came, the
    // turn's next request fails, and once stored, every later one.
    const strict = await FakeOpenAIServer.start({ strictToolArguments: true });
    try {
      strict.enqueue(
        reply.toolCall("terminal", '{"command": "echo hi'),
        reply.text("fixed it"),
        reply.text("again"),
      );
      const agent = makeAgent({
        models: [{ name: "strict", baseUrl: strict.baseUrl, model: "strict-model" }],
        fallback: [],
      });
      expect((await turn(agent, "run it")).reply).toBe("fixed it");
      expect((await turn(agent, "and now")).reply).toBe("again");

      const sent = strict.requests[1]!.body.messages;
      expect(sent.find((m) => m.role === "assistant")?.tool_calls?.[0]?.function.arguments).toBe(
        "{}",
      );
      expect(sent.find((m) => m.role === "tool")?.content).toBe(
        "error: the arguments of terminal are not valid JSON",
      );
    } finally {
      await strict.close();
    }
  });
});

describe("histories stored before the repairs", () => {
  it("are repaired when loaded, so a strict endpoint answers the session again", async () => {
    // Written by a version that stored a cut-off call's arguments and half an emoji as they
    // came: every request of the session carried them, and a strict endpoint refused each one.
    const sessionId = await store.currentSessionId(SessionKey);
    await store.appendHistory(sessionId, [
      { role: "user", content: "run it" },
      {
        role: "assistant",
        content: "on it \ud83d",
        tool_calls: [
          {
            id: "c1",
            type: "function",
            function: { name: "terminal", arguments: '{"command": "echo hi' },
          },
        ],
      },
      { role: "tool", tool_call_id: "c1", content: "error: the arguments are not valid JSON" },
      { role: "assistant", content: "sorry" },
    ]);
    const strict = await FakeOpenAIServer.start({ strictToolArguments: true });
    try {
      strict.enqueue(reply.text("answered"));
      const agent = makeAgent({
        models: [{ name: "strict", baseUrl: strict.baseUrl, model: "strict-model" }],
        fallback: [],
      });
      expect((await turn(agent, "and now")).reply).toBe("answered");
      const sent = strict.requests[0]!.body.messages;
      const call = sent.find((m) => m.role === "assistant")!;
      expect(call.tool_calls?.[0]?.function.arguments).toBe("{}");
      expect(call.content).toBe("on it \ufffd");
    } finally {
      await strict.close();
    }
  });
});

describe("usage a stream reports", () => {
  it("records the usage of a stream whose chunks carry no id", async () => {
    // OpenVINO's model server (and Google's layer in 2025) send no id: the usage of the last
    // chunk was merged only from chunks with one, so every call counted 0 and the budget
    // never stopped anything.
    const usage: FakeUsage = { promptTokens: 600, completionTokens: 400, cachedTokens: 0 };
    main.respondWith(() => reply.text("ok", { usage, stream: { withoutIds: true } }));
    const agent = makeAgent({ fallback: [], budget: { dailyTokens: 1_000 } });

    expect((await turn(agent, "one")).reply).toBe("ok");
    expect((await profileTotals()).today).toMatchObject({ inputTokens: 600, outputTokens: 400 });
    expect((await turn(agent, "two")).reply).toMatch(
      /^⛔ This bot's daily model budget is used up/,
    );
  });
});

describe("text an endpoint sends", () => {
  it("stores and delivers half a surrogate pair as U+FFFD, so the next request is valid JSON", async () => {
    // Some local servers stream broken emoji; OpenAI's and Anthropic's parsers refuse half a
    // pair in a request, so stored as it came it would fail every later turn of the session.
    // One UTF-16 unit per chunk: the whole emoji's halves come in two events.
    main.enqueue(
      reply.text("broken \ud83d emoji, whole 😀 emoji", { stream: { chunkChars: 1 } }),
      reply.text("next"),
    );
    const agent = makeAgent({ fallback: [] });

    expect((await turn(agent, "one")).reply).toBe("broken \ufffd emoji, whole 😀 emoji");
    expect((await turn(agent, "two")).reply).toBe("next");
  });
});

describe.each<[FakeProvider, string, number]>([
  ["anthropic", "/v1/chat/completions", 0],
  ["gemini", "/v1beta/openai/chat/completions", 1],
])("the %s compatible endpoint as configured", (provider, path, cachedCalls) => {
  it("is asked at its path, and its usage (cached tokens as it reports them) is recorded", async () => {
    const fake = await FakeOpenAIServer.start({ provider });
    try {
      fake.enqueue(reply.text("hi"), reply.text("again"));
      const agent = makeAgent({
        models: [{ name: provider, baseUrl: fake.baseUrl, model: `${provider}-model` }],
        fallback: [],
      });
      await turn(agent, "one");
      await turn(agent, "two");
      expect(fake.requests.map((request) => request.path)).toEqual([path, path]);
      const { all } = await profileTotals();
      const reported = fake.reportedUsage();
      expect(all.inputTokens).toBe(reported.promptTokens);
      expect(all.outputTokens).toBe(reported.completionTokens);
      // Anthropic's layer reports no cached tokens; Gemini's only once there are some.
      expect(all.cachedTokens).toBe(cachedCalls === 0 ? 0 : reported.cachedTokens);
      expect(all.cachedTokens > 0).toBe(cachedCalls > 0);
    } finally {
      await fake.close();
    }
  });
});
