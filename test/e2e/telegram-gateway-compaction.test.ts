import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  contentText,
  FakeOpenAIServer,
  factsModel,
  isSummaryRequest,
  type RecordedRequest,
  reply,
} from "../fakes/openai/index.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Member = 1002;
const Admin = 1001;
const ContextTokens = 6_000;
const Filler = "a sentence that only takes room in the conversation. ".repeat(8);

/** The texts of a chat request's messages, system prompt included. */
function textOf(request: RecordedRequest | undefined): string {
  return (request?.body.messages ?? []).map((m) => contentText(m.content) ?? "").join("\n");
}

/**
 * Compaction, `/compact [focus]` and `/new` end to end on Telegram (docs/sessions.md, "Context
 * budget and compaction"): grammY against the fake Bot API, the openai agent against the fake
 * model with a small context, the sandbox in Docker.
 */
describe("gateway over Telegram: compaction, /compact and /new", () => {
  let model: FakeOpenAIServer;
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    model = (await FakeOpenAIServer.start({ contextTokens: ContextTokens })).respondWith(
      factsModel(),
    );
    harness = await TelegramGatewayHarness.start("t-compact", [
      {
        admins: [Admin],
        allowed: [Member],
        agent: {
          kind: "openai",
          baseUrl: model.baseUrl,
          model: "fake-model",
          contextTokens: ContextTokens,
        },
      },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  const say = (text: string, userId = Member) =>
    bot.handle((fake) => fake.sendPrivateText({ userId, text }));

  it("tells the chat in one line when the conversation was compacted, and the fact survives", async () => {
    await say("Please remember FACT{the launch code is 0451}.");
    let since = bot.mark();
    let turns = 0;
    while (!bot.texts(Member, since).some((t) => t.startsWith("🗜️")) && turns < 60) {
      since = bot.mark();
      await say(`turn ${turns++}: ${Filler}`);
    }
    const texts = bot.texts(Member, since);
    expect(texts.filter((t) => t.startsWith("🗜️ Compacted the conversation"))).toHaveLength(1);
    expect(texts.at(-1)).toBe("noted");
    expect(model.requests.every((r) => r.promptTokens <= ContextTokens * 0.75)).toBe(true);

    const recallSince = bot.mark();
    await say("recall please");
    expect(bot.texts(Member, recallSince)).toEqual(["I remember: FACT{the launch code is 0451}"]);
  });

  it("/compact summarizes on demand with the focus, for a member", async () => {
    await say(`one more turn FACT{the dog is Rex}: ${Filler}`);
    await say(`and another: ${Filler}`);
    await say(`and a third: ${Filler}`);
    const before = model.requests.length;
    const since = bot.mark();
    await say("/compact the dog's name");
    const [answer] = bot.texts(Member, since);
    expect(answer).toMatch(/^🗜️ Compacted: \d+ older messages? summarized/);
    const summary = model.requests.slice(before).find(isSummaryRequest);
    expect(textOf(summary)).toContain("The user asked this summary to keep: the dog's name");

    const next = model.requests.length;
    await say("recall now");
    const request = model.requests[next];
    expect(contentText(request?.body.messages[0]?.content)).toContain("FACT{the dog is Rex}");
    const users = (request?.body.messages ?? [])
      .filter((m) => m.role === "user")
      .map((m) => contentText(m.content) ?? "");
    // The two newest turns stay as they are; the older ones are only in the summary.
    expect(users.map((text) => text.slice(0, 12))).toEqual([
      "and another:",
      "and a third:",
      "recall now",
    ]);
  });

  it("/new starts an empty conversation and keeps the sandbox's files", async () => {
    model.enqueue(
      reply.toolCall("write_file", { path: "/workspace/keep.txt", content: "kept" }),
      reply.text("wrote it"),
    );
    await say("write keep.txt");
    const since = bot.mark();
    await say("/new");
    expect(bot.texts(Member, since)).toEqual([
      "🆕 New conversation started; the sandbox and its files are kept.",
    ]);
    const next = model.requests.length;
    await say("recall anything?");
    const request = model.requests[next]!;
    expect(request.body.messages.map((m) => m.role)).toEqual(["system", "user"]);
    expect(textOf(request)).not.toContain("FACT{");
    expect(bot.texts(Member).at(-1)).toBe("I remember: nothing");
    expect(existsSync(join(bot.profileSlotDir(), "workspace", "keep.txt"))).toBe(true);
  });
});
