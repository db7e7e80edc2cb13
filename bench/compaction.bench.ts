/**
 * Compaction cost benchmark (not a test): what keeping a long conversation under the context
 * budget costs in model calls and tokens, per 100 turns. Run from the root with
 * `pnpm bench:compaction` after `pnpm --filter @mediagate/gateway build`.
 *
 * The real `OpenAIAgent` and state store against the fake OpenAI server (`test/fakes/openai`):
 * each user message is about 110 tokens, each reply about 60, every 10th turn reads a file of
 * about 1,000 tokens with a tool call; summary requests are answered by the fake's facts model
 * (a short summary: real summaries are longer, up to `Defaults.compaction.summaryMaxTokens`).
 * Prints one JSON line per context size.
 * Env: MEDIAGATE_BENCH_COMPACTION_TURNS (default 300), MEDIAGATE_BENCH_COMPACTION_CONTEXTS
 * (default `8000,32000,128000`).
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, OpenAIAgent, SqliteStateStore, stateDbPath } from "@mediagate/gateway";
import {
  FakeOpenAIServer,
  factsModel,
  isSummaryRequest,
  LocalToolRunner,
  reply,
} from "../test/fakes/openai/index.js";

const Turns = Number(process.env.MEDIAGATE_BENCH_COMPACTION_TURNS ?? 300);
const Contexts = (process.env.MEDIAGATE_BENCH_COMPACTION_CONTEXTS ?? "8000,32000,128000")
  .split(",")
  .map(Number);
const Sentence = "a sentence of an ordinary chat message, about this long. ";
const ReplyText = `Here is my answer. ${"It explains a thing in a few words. ".repeat(7)}`;

function userText(n: number): string {
  if (n % 10 === 5) return `turn ${n}: read big.txt`;
  return `turn ${n}: ${Sentence.repeat(9)}`;
}

async function run(contextTokens: number): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "mg-bench-compaction-"));
  const facts = factsModel();
  const fake = (await FakeOpenAIServer.start({ contextTokens })).respondWith(async (request) => {
    const answer = await facts(request);
    return isSummaryRequest(request) || answer.type !== "text" || answer.content !== "noted"
      ? answer
      : reply.text(ReplyText);
  });
  const store = await SqliteStateStore.open(stateDbPath(dir));
  try {
    await mkdir(join(dir, "workspace"));
    await writeFile(
      join(dir, "workspace", "big.txt"),
      "log line with some numbers 12345\n".repeat(130),
    );
    const agent = new OpenAIAgent({
      baseUrl: fake.baseUrl,
      model: "bench-model",
      contextTokens,
      store,
      logger: createLogger({ level: "silent" }),
      maxRetries: 0,
    });
    const runner = new LocalToolRunner(join(dir, "workspace"));
    const sessionId = await store.currentSessionId("bench");
    let compactions = 0;
    const started = performance.now();
    for (let n = 0; n < Turns; n++) {
      const result = await agent.runTurn({
        text: userText(n),
        profile: "bench",
        sessionKey: "bench",
        sessionId,
        tools: runner,
        signal: new AbortController().signal,
        attachments: [],
      });
      compactions += (result.notices ?? []).filter((line) => line.startsWith("🗜️")).length;
    }
    const elapsedMs = performance.now() - started;
    const chat = fake.requests.filter((request) => !isSummaryRequest(request));
    const summaries = fake.requests.filter(isSummaryRequest);
    const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
    const per100 = (value: number) => Math.round((value * 100) / Turns);
    const chatPrompt = sum(chat.map((request) => request.promptTokens));
    const summaryPrompt = sum(summaries.map((request) => request.promptTokens));
    const line = {
      bench: "compaction",
      context_tokens: contextTokens,
      turns: Turns,
      compactions_per_100_turns: per100(compactions),
      summary_calls_per_100_turns: per100(summaries.length),
      summary_prompt_tokens_per_100_turns: per100(summaryPrompt),
      chat_calls_per_100_turns: per100(chat.length),
      chat_prompt_tokens_per_100_turns: per100(chatPrompt),
      summary_share_of_prompt_tokens:
        Math.round((summaryPrompt / (summaryPrompt + chatPrompt)) * 1000) / 1000,
      max_chat_prompt_tokens: Math.max(...chat.map((request) => request.promptTokens)),
      overflows: fake.requests.filter((request) => request.promptTokens > contextTokens).length,
      agent_ms_per_turn: Math.round((elapsedMs / Turns) * 100) / 100,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  } finally {
    await store.close();
    await fake.close();
    await rm(dir, { recursive: true, force: true });
  }
}

for (const context of Contexts) await run(context);
