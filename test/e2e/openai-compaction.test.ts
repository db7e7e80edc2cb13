import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  type AgentTurnResult,
  OpenAIAgent,
  type OpenAIAgentOptions,
  SqliteStateStore,
  type StateStore,
  stateDbPath,
  usageDays,
} from "@mediagate/gateway";
import { pino } from "pino";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  contentText,
  contextLengthErrorBody,
  FakeOpenAIServer,
  factsModel,
  isSummaryRequest,
  LocalToolRunner,
  type RecordedRequest,
  reply,
} from "../fakes/openai/index.js";

const SessionKey = "agent:default:telegram:dm:7";
const FirstFact = "FACT{the user's cat is called Brioche}";
const Compacted = /^🗜️ Compacted the conversation: \d+ older messages? summarized/;

let dir: string;
let server: FakeOpenAIServer | undefined;
let second: FakeOpenAIServer | undefined;
let store: StateStore;
let runner: LocalToolRunner;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "mg-compaction-e2e-"));
  mkdirSync(join(dir, "workspace"));
  // A tool output of about 1,000 tokens: older ones are trimmed before anything is summarized.
  writeFileSync(
    join(dir, "workspace", "big.txt"),
    "log line with some numbers 12345\n".repeat(130),
  );
  store = await SqliteStateStore.open(stateDbPath(dir));
  runner = new LocalToolRunner(join(dir, "workspace"));
});

afterEach(async () => {
  await server?.close();
  await second?.close();
  server = undefined;
  second = undefined;
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

async function startServer(options: { contextTokens?: number; tokenScale?: number } = {}) {
  server = await FakeOpenAIServer.start(options);
  return server;
}

function makeAgent(fake: FakeOpenAIServer, options: Partial<OpenAIAgentOptions> = {}) {
  return new OpenAIAgent({
    baseUrl: fake.baseUrl,
    model: "fake-model",
    store,
    logger: pino({ level: "silent" }),
    maxRetries: 0,
    ...options,
  });
}

async function turn(
  agent: OpenAIAgent,
  text: string,
  onText?: (piece: string) => void,
): Promise<AgentTurnResult> {
  return agent.runTurn({
    text,
    profile: "default",
    sessionKey: SessionKey,
    sessionId: await store.currentSessionId(SessionKey),
    tools: runner,
    signal: new AbortController().signal,
    attachments: [],
    ...(onText === undefined ? {} : { onText }),
  });
}

/** The n-th user message of the long conversation: filler, a fact now and then, a tool read. */
function userText(n: number): string {
  if (n === 0) return `Hello! Please remember ${FirstFact}. Also some words to fill the turn.`;
  if (n % 10 === 5) return `turn ${n}: read big.txt`;
  const fact = n % 50 === 0 ? ` Remember FACT{number ${n}}.` : "";
  return `turn ${n}: ${"a sentence that only takes room in the conversation. ".repeat(6)}${fact}`;
}

function summaryRequestsIn(requests: readonly RecordedRequest[]): RecordedRequest[] {
  return requests.filter(isSummaryRequest);
}

describe("openai agent compaction", () => {
  it("keeps 300 turns under the budget, carries the first fact through summaries, tells each compaction once", async () => {
    const contextTokens = 6_000;
    const budget = Math.floor(contextTokens * 0.75);
    // The server's tokenizer counts a tenth more than the client's estimate: usage corrects it.
    const fake = (await startServer({ contextTokens, tokenScale: 1.1 })).respondWith(factsModel());
    const agent = makeAgent(fake, { contextTokens });
    const noticesPerTurn: number[] = [];
    const turnsWithSummaries: number[] = [];
    for (let n = 0; n < 300; n++) {
      const before = fake.requests.length;
      const result = await turn(agent, userText(n));
      expect(result.reply).not.toContain("(reply cut off");
      const notices = (result.notices ?? []).filter((line) => Compacted.test(line));
      noticesPerTurn.push(notices.length);
      if (summaryRequestsIn(fake.requests.slice(before)).length > 0) turnsWithSummaries.push(n);
    }
    const recall = await turn(agent, "Now recall everything I asked you to remember.");

    const chat = fake.requests.filter((request) => !isSummaryRequest(request));
    expect(Math.max(...chat.map((request) => request.promptTokens))).toBeLessThanOrEqual(budget);
    expect(
      Math.max(...summaryRequestsIn(fake.requests).map((r) => r.promptTokens)),
    ).toBeLessThanOrEqual(budget);
    expect(fake.requests.every((request) => request.promptTokens <= contextTokens)).toBe(true);
    expect(turnsWithSummaries.length).toBeGreaterThan(3);
    // One line per turn that compacted, none in the others.
    expect(noticesPerTurn.flatMap((count, n) => (count > 0 ? [n] : []))).toEqual(
      turnsWithSummaries,
    );
    expect(Math.max(...noticesPerTurn)).toBe(1);
    expect(recall.reply).toContain(FirstFact);
    expect(recall.reply).toContain("FACT{number 250}");
    const last = fake.requests.at(-1)!;
    const firstUser = last.body.messages.find((message) => message.role === "user");
    expect(contentText(firstUser?.content)).not.toContain(FirstFact);
    expect(contentText(last.body.messages[0]?.content)).toContain(FirstFact);
    // Nothing was deleted: every turn's messages are still stored.
    const stored = await store.loadHistory(await store.currentSessionId(SessionKey));
    expect(stored.filter((message) => message.role === "user")).toHaveLength(301);
  }, 120_000);

  it("streams only the turn's answer into the chat, never the text of a summary it made", async () => {
    const contextTokens = 6_000;
    const fake = (await startServer({ contextTokens })).respondWith(factsModel());
    const agent = makeAgent(fake, { contextTokens });
    let compactedTurns = 0;
    const shown: string[] = [];
    for (let n = 0; n < 120; n++) {
      const before = fake.requests.length;
      const pieces: string[] = [];
      const result = await turn(agent, userText(n), (piece) => pieces.push(piece));
      const summaries = summaryRequestsIn(fake.requests.slice(before));
      if (summaries.length > 0) compactedTurns++;
      // What the chat's preview showed is the answer, whole, and nothing else.
      expect(pieces.join("")).toBe(result.reply);
      shown.push(pieces.join(""));
    }
    expect(compactedTurns).toBeGreaterThan(0);
    const conversation = await store.loadConversation(await store.currentSessionId(SessionKey));
    const summary = conversation.summary?.content ?? "";
    expect(summary).not.toBe("");
    expect(shown.some((text) => text.includes(summary))).toBe(false);
  }, 120_000);

  it("keeps the conversation when the summary fails, says so, and compacts on a later turn", async () => {
    let summariesFail = true;
    const facts = factsModel();
    const fake = (await startServer({ contextTokens: 6_000 })).respondWith((request) =>
      isSummaryRequest(request) && summariesFail
        ? reply.error(500, "summary broke")
        : facts(request),
    );
    const agent = makeAgent(fake, { contextTokens: 6_000 });
    let failedAt: number | undefined;
    let notice: string | undefined;
    for (let n = 0; n < 80 && failedAt === undefined; n++) {
      const result = await turn(agent, userText(n));
      notice = result.notices?.find((line) => line.startsWith("⚠️ Could not summarize"));
      if (notice !== undefined) failedAt = n;
    }
    expect(failedAt).toBeDefined();
    expect(notice).toMatch(/nothing is lost/);
    const sessionId = await store.currentSessionId(SessionKey);
    expect((await store.loadConversation(sessionId)).summary).toBeUndefined();
    expect((await store.loadHistory(sessionId)).filter((m) => m.role === "user")).toHaveLength(
      failedAt! + 1,
    );

    summariesFail = false;
    const next = await turn(agent, "turn after the failure");
    expect(next.notices?.some((line) => Compacted.test(line))).toBe(true);
    expect((await store.loadConversation(sessionId)).summary?.content).toContain(FirstFact);
  }, 60_000);

  it("compacts and retries once when the server says the context overflowed", async () => {
    // The agent believes in a large context; the server's is small and says so with a 400.
    const fake = (await startServer({ contextTokens: 5_000 })).respondWith(factsModel());
    const agent = makeAgent(fake, { contextTokens: 100_000 });
    let overflowAt = -1;
    for (let n = 0; n < 60 && overflowAt === -1; n++) {
      const before = fake.requests.length;
      const result = await turn(agent, userText(n));
      expect(result.reply).toBeTruthy();
      const answered = fake.requests.slice(before);
      if (answered.some((request) => request.promptTokens > 5_000)) {
        overflowAt = n;
        const overflow = answered.findIndex((request) => request.promptTokens > 5_000);
        expect(isSummaryRequest(answered[overflow + 1]!)).toBe(true);
        expect(answered.at(-1)!.promptTokens).toBeLessThanOrEqual(5_000);
        expect(result.notices?.filter((line) => Compacted.test(line))).toHaveLength(1);
      }
    }
    expect(overflowAt).toBeGreaterThan(0);
    // The budget now follows the context the server named: no second overflow.
    const before = fake.requests.length;
    for (let n = overflowAt + 1; n < overflowAt + 40; n++) await turn(agent, userText(n));
    expect(
      fake.requests
        .slice(before)
        .filter((r) => r.promptTokens > 5_000 * 0.75)
        .map((r) => [r.index, r.promptTokens, isSummaryRequest(r)]),
    ).toEqual([]);
  }, 60_000);

  it("does not shrink a model's budget below what it answered when its 400 names an absurd context", async () => {
    const fake = (await startServer()).respondWith(factsModel());
    const agent = makeAgent(fake, { contextTokens: 100_000 });
    for (let n = 0; n < 3; n++) await turn(agent, userText(n));
    // A broken proxy's 400: the model would have 16 tokens of context.
    fake.enqueue(reply.raw(400, JSON.stringify(contextLengthErrorBody(16, 2_000))));
    const refused = await turn(agent, userText(3));
    expect(refused.reply).toBe("noted");

    const before = fake.requests.length;
    const next = await turn(agent, userText(4));
    expect(next.reply).toBe("noted");
    expect(next.notices ?? []).toEqual([]);
    expect(fake.requests.length).toBe(before + 1);
  });

  it("trims the running turn's older tool outputs when one turn alone outgrows the budget", async () => {
    const fake = await startServer({ contextTokens: 6_000 });
    for (let n = 0; n < 6; n++) fake.enqueue(reply.toolCall("read_file", { path: "big.txt" }));
    fake.enqueue(reply.text("read them all"));
    const agent = makeAgent(fake, { contextTokens: 6_000 });
    const result = await turn(agent, "read big.txt six times");
    expect(result.reply).toBe("read them all");
    expect(fake.requests).toHaveLength(7);
    expect(Math.max(...fake.requests.map((r) => r.promptTokens))).toBeLessThanOrEqual(4_500);
    // The last read reaches the model whole; the earlier ones were cut.
    const last = fake.requests.at(-1)!.body.messages.filter((m) => m.role === "tool");
    expect(contentText(last.at(-1)?.content)).not.toContain("chars trimmed");
    expect(contentText(last[0]?.content)).toContain("chars trimmed to fit the context");
    // Stored whole: trimming changes the request only.
    const stored = await store.loadHistory(await store.currentSessionId(SessionKey));
    expect(stored.filter((m) => m.role === "tool" && m.content.includes("trimmed"))).toEqual([]);
  });

  it("answers after /model switches to a smaller context the two newest turns alone outgrow", async () => {
    // The newest turns are kept whole, but two of them read big.txt four times each on a large
    // model: more than the small model's whole context. Every later turn on it would overflow.
    const large = await startServer();
    second = await FakeOpenAIServer.start({ contextTokens: 6_000 });
    const small = second.respondWith(() => reply.text("answered on the small model"));
    const agent = makeAgent(large, {
      models: [
        { name: "large", baseUrl: large.baseUrl, model: "large-model", contextTokens: 100_000 },
        { name: "small", baseUrl: small.baseUrl, model: "small-model", contextTokens: 6_000 },
      ],
    });
    for (let n = 0; n < 2; n++) {
      large.enqueue(
        reply.toolCalls(
          Array.from({ length: 4 }, () => ({ name: "read_file", arguments: { path: "big.txt" } })),
        ),
      );
      large.enqueue(reply.text(`read it four times (${n})`));
      expect((await turn(agent, `read big.txt four times (${n})`)).reply).toBe(
        `read it four times (${n})`,
      );
    }
    await store.setSessionModel(SessionKey, "small");

    for (const text of ["hello on the small model", "and once more"]) {
      const result = await turn(agent, text);
      expect(result.reply).toBe("answered on the small model");
    }
    expect(small.requests.every((request) => request.promptTokens <= 6_000 * 0.75)).toBe(true);
    // Trimming the reads was enough: the two earlier turns themselves are still sent.
    const users = small.requests[0]!.body.messages.filter((m) => m.role === "user");
    expect(users.map((m) => contentText(m.content))).toEqual([
      "read big.txt four times (0)",
      "read big.txt four times (1)",
      "hello on the small model",
    ]);
    // Trimmed in the request only: every read is stored whole.
    const stored = await store.loadHistory(await store.currentSessionId(SessionKey));
    expect(stored.filter((m) => m.role === "tool" && !m.content.includes("trimmed"))).toHaveLength(
      8,
    );
  });

  it("leaves out the older of the newest turns when, without tool outputs, they outgrow a smaller context", async () => {
    const large = (await startServer()).respondWith(() => reply.text("noted"));
    second = await FakeOpenAIServer.start({ contextTokens: 6_000 });
    const small = second.respondWith(() => reply.text("answered on the small model"));
    const agent = makeAgent(large, {
      models: [
        { name: "large", baseUrl: large.baseUrl, model: "large-model", contextTokens: 100_000 },
        { name: "small", baseUrl: small.baseUrl, model: "small-model", contextTokens: 6_000 },
      ],
    });
    // Two long messages of about 3,200 tokens each: nothing in them to trim.
    for (const n of [0, 1]) await turn(agent, `long message ${n}: ${"word ".repeat(3_200)}`);
    await store.setSessionModel(SessionKey, "small");

    expect((await turn(agent, "hello on the small model")).reply).toBe(
      "answered on the small model",
    );
    const users = small.requests[0]!.body.messages.filter((m) => m.role === "user");
    expect(users.map((m) => contentText(m.content)?.slice(0, 14))).toEqual([
      "long message 1",
      "hello on the s",
    ]);
  });

  it("does not believe a server's prompt count far off the estimate, and summarizes nothing for it", async () => {
    const facts = factsModel();
    let absurd = false;
    const fake = (await startServer()).respondWith(async (request) => {
      const answer = await facts(request);
      // One answer claims ~2^62 prompt tokens (counted as a billion): a broken usage report.
      if (!absurd || answer.type !== "text") return answer;
      absurd = false;
      return { ...answer, usage: { promptTokens: 2 ** 62, completionTokens: 5, cachedTokens: 0 } };
    });
    const agent = makeAgent(fake, { contextTokens: 100_000 });
    for (let n = 0; n < 5; n++) await turn(agent, userText(n));
    absurd = true;
    await turn(agent, "the answer to this one reports absurd usage");
    const before = fake.requests.length;

    const next = await turn(agent, "and the next one");

    expect(summaryRequestsIn(fake.requests.slice(before))).toEqual([]);
    expect(next.notices ?? []).toEqual([]);
  });

  it("answers a message too long for the context on its own clearly, asking the model nothing", async () => {
    const fake = (await startServer({ contextTokens: 6_000 })).respondWith(factsModel());
    const agent = makeAgent(fake, { contextTokens: 6_000 });
    for (let n = 0; n < 6; n++) await turn(agent, userText(n));
    const sessionId = await store.currentSessionId(SessionKey);
    const before = await store.loadConversation(sessionId);
    const asked = fake.requests.length;

    // A long voice note's transcript, a pasted log: ~8,000 tokens, more than the whole context.
    const result = await turn(agent, "word ".repeat(8_000));

    expect(result.reply).toMatch(
      /^⚠️ That message is too long for the model: ≈\d+ tokens, where fake-model reads at most ≈4500 at once\./,
    );
    // No summary of the history that could not make room, no request the server refuses.
    expect(fake.requests.length).toBe(asked);
    expect(await store.loadConversation(sessionId)).toEqual(before);
    expect((await turn(agent, "a short one")).reply).toBeTruthy();
  });

  it("never cuts a trimmed output inside a surrogate pair, which endpoints refuse", async () => {
    // Emoji are two UTF-16 units; after the "x" every cut at an even position splits one.
    writeFileSync(join(dir, "workspace", "emoji.txt"), `x${"😀".repeat(2_000)}`);
    const fake = await startServer({ contextTokens: 6_000 });
    for (let n = 0; n < 4; n++) fake.enqueue(reply.toolCall("read_file", { path: "emoji.txt" }));
    fake.enqueue(reply.text("read them all"));
    const agent = makeAgent(fake, { contextTokens: 6_000 });

    const result = await turn(agent, "read emoji.txt four times");

    expect(result.reply).toBe("read them all");
    const tools = fake.requests.at(-1)!.body.messages.filter((m) => m.role === "tool");
    expect(contentText(tools[0]?.content)).toContain("chars trimmed to fit the context");
  });

  it("runs one /compact of a session at a time: a second is told, asking the model nothing", async () => {
    const facts = factsModel();
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const fake = (await startServer()).respondWith(async (request) => {
      if (isSummaryRequest(request)) await held;
      return facts(request);
    });
    const agent = makeAgent(fake, { contextTokens: 100_000 });
    for (let n = 0; n < 5; n++) await turn(agent, userText(n));
    const sessionId = await store.currentSessionId(SessionKey);
    const compact = () =>
      agent.compact({ sessionId, sessionKey: SessionKey, signal: new AbortController().signal });

    // Each /compact bypasses the session's queue: typed ten times, ten summaries of the whole
    // conversation would be billed at once, past the daily budget's one call per session.
    const first = compact();
    await fake.waitForRequests(6);
    const second = compact();
    // Done at once, or (without the bound) its own summary request reached the model.
    await Promise.race([second, fake.waitForRequests(7)]);
    release();

    expect((await second).stopped).toBe(
      "A compaction of this conversation is already running; its answer comes when it is done.",
    );
    expect((await first).summarizedMessages).toBeGreaterThan(0);
    expect(summaryRequestsIn(fake.requests)).toHaveLength(1);
    // Once done, the next /compact runs again.
    expect((await compact()).stopped).toBeUndefined();
  });

  it("asks no further summary request of a compaction once the daily budget is used up", async () => {
    const fake = (await startServer()).respondWith(factsModel());
    // Eight turns of ~700 tokens: at a 3,000-token context, the six older ones take three
    // summary requests to fold in.
    const filler = (n: number) => `turn ${n}: ${"many words that fill the turn ".repeat(115)}`;
    const build = makeAgent(fake, { contextTokens: 100_000 });
    for (let n = 0; n < 8; n++) await turn(build, filler(n));
    const spent = await store.usageOfDay(usageDays(Date.now(), 7).today);
    // The budget has room for one more call: the first summary request uses it up.
    const agent = makeAgent(fake, {
      contextTokens: 3_000,
      budget: { dailyTokens: spent.inputTokens + spent.outputTokens + 1 },
    });
    const before = fake.requests.length;

    const result = await agent.compact({
      sessionId: await store.currentSessionId(SessionKey),
      sessionKey: SessionKey,
      signal: new AbortController().signal,
    });

    expect(summaryRequestsIn(fake.requests.slice(before))).toHaveLength(1);
    expect(result.summarizedMessages).toBeGreaterThan(0);
  });

  it("stores nothing of a turn under the old session id when /new replaced it while the turn ran", async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const fake = (await startServer()).respondWith(async () => {
      await gate;
      return reply.text("late answer");
    });
    const agent = makeAgent(fake);
    const old = await store.currentSessionId(SessionKey);
    const running = turn(agent, "a question");
    await fake.waitForRequests(1);
    // /new (from this replica or another) lands while the model writes the answer.
    const fresh = await store.rotateSessionId(SessionKey);
    release();
    expect((await running).reply).toBe("late answer");

    expect(await store.loadHistory(old)).toEqual([]);
    expect(await store.loadHistory(fresh)).toEqual([]);
  });

  it("bounds a summary's answer, so a model that writes on is stopped by the server", async () => {
    // A model that ignores the summary's "at most N words": 6,000 tokens of notes.
    const endless = `Facts: ${FirstFact} ${"and another long note about nothing at all. ".repeat(700)}`;
    const fake = (await startServer()).respondWith((request) =>
      isSummaryRequest(request) ? reply.text(endless) : factsModel()(request),
    );
    const agent = makeAgent(fake, { contextTokens: 100_000 });
    const sessionId = await store.currentSessionId(SessionKey);
    for (let n = 0; n < 5; n++) await turn(agent, userText(n));
    const result = await agent.compact({
      sessionId,
      sessionKey: SessionKey,
      signal: new AbortController().signal,
    });

    expect(result.summarizedMessages).toBeGreaterThan(0);
    const summaries = summaryRequestsIn(fake.requests);
    expect(summaries).toHaveLength(1);
    // The summary is at most 2,000 tokens (Defaults.compaction.summaryMaxTokens); its answer
    // may take twice that (room for a reasoning model's thinking), never the 6,000 written.
    expect(summaries[0]!.body.max_completion_tokens).toBe(4_000);
    expect(summaries[0]!.usage?.completionTokens).toBeLessThanOrEqual(4_000);
    const { all } = await store.usagePeriods({ kind: "profile" }, usageDays(Date.now(), 7));
    expect(all.outputTokens).toBe(fake.reportedUsage().completionTokens);
    expect(fake.reportedUsage().completionTokens).toBeLessThan(4_100);
    const summary = (await store.loadConversation(sessionId)).summary?.content ?? "";
    expect(summary).toContain(FirstFact);
  });

  it("compacts on demand with a focus, keeping the newest turns", async () => {
    const fake = (await startServer()).respondWith(factsModel());
    const agent = makeAgent(fake, { contextTokens: 100_000 });
    const sessionId = await store.currentSessionId(SessionKey);
    expect(
      await agent.compact({
        sessionId,
        sessionKey: SessionKey,
        signal: new AbortController().signal,
      }),
    ).toMatchObject({
      summarizedMessages: 0,
    });
    for (let n = 0; n < 5; n++) await turn(agent, userText(n));
    const result = await agent.compact({
      sessionId,
      sessionKey: SessionKey,
      focus: "the cat's name",
      signal: new AbortController().signal,
    });
    expect(result.summarizedMessages).toBeGreaterThan(0);
    expect(result.afterTokens).toBeLessThan(result.beforeTokens);
    const summaryRequest = fake.requests.at(-1)!;
    expect(isSummaryRequest(summaryRequest)).toBe(true);
    // Every call, the summary's too, is recorded as usage with what the server reported.
    const { all } = await store.usagePeriods({ kind: "profile" }, usageDays(Date.now(), 7));
    expect(all.inputTokens).toBe(fake.reportedUsage().promptTokens);
    expect(all.calls).toBe(fake.requests.length);
    expect(contentText(summaryRequest.body.messages[0]?.content)).toContain("the cat's name");
    const conversation = await store.loadConversation(sessionId);
    expect(conversation.summary?.content).toContain(FirstFact);
    expect(conversation.messages.filter((stored) => stored.message.role === "user")).toHaveLength(
      2,
    );
  });
});
