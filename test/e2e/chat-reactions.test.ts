import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { asShown, type FakeDiscord } from "../fakes/discord/index.js";
import { FakeOpenAIServer, type FakeReply, reply } from "../fakes/openai/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const ApiKey = "sk-e2e-reactions-4c1f-must-never-leak";
const [Seen, Working, Done, Failed] = ["👀", "👨‍💻", "👍", "👎"];

/** A command whose output (about 109 KB, no final newline) is far over the reply's cap. */
const LongCommand = "seq 1 20000";
const LongOutput = Array.from({ length: 20_000 }, (_, i) => String(i + 1)).join("\n");
const SavedLine =
  /^\[the whole output \(\d+(\.\d+)? KB\) is attached as (output-\d{8}-\d{6}-[0-9a-f]{8}\.txt)\]$/m;

/**
 * The model's answer held until the test lets it go, so a turn is seen `working` before it
 * ends: the reactions' order does not depend on how fast the machine is.
 */
function heldAnswer(model: FakeOpenAIServer, answer: FakeReply) {
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  model.respondWith(async () => {
    await gate;
    return answer;
  });
  return release;
}

/**
 * Status reactions (docs/sessions.md, "Status reactions") and long command outputs
 * (docs/media.md, "Long command output") end to end: the real gateway from its config, grammY
 * and discord.js against the fakes (which check reactions as the platforms do), the shell agent
 * in the real engine and the openai agent against the fake model.
 */
describe("status reactions and long outputs over Telegram", () => {
  const Admin = 1601;
  let harness: TelegramGatewayHarness;
  let shell: TelegramBot;
  let openai: TelegramBot;
  let held: TelegramBot;
  let model: FakeOpenAIServer;

  beforeAll(async () => {
    model = await FakeOpenAIServer.start();
    const agent = { kind: "openai", baseUrl: model.baseUrl, apiKey: ApiKey, model: "fake-model" };
    // `afterMs: 0`: every status shows at once, so each step of the sequence can be checked.
    harness = await TelegramGatewayHarness.start("t-react", [
      { admins: [Admin], settings: { reactions: { afterMs: 0 } } },
      { admins: [Admin], agent, settings: { reactions: { afterMs: 0 } } },
      { admins: [Admin], agent },
    ]);
    shell = harness.bot(0);
    openai = harness.bot(1);
    held = harness.bot(2);
  });

  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  const shown = (bot: TelegramBot, messageId: number) =>
    bot.fake.reactions.changes
      .filter((c) => c.chatId === String(Admin) && c.messageId === messageId)
      .map((c) => c.emojis.join(""));

  it("follows a turn: seen, working while the model thinks, done once answered", async () => {
    const release = heldAnswer(model, reply.text("all good"));
    const since = openai.mark();
    const update = await openai.post((fake) => fake.sendPrivateText({ userId: Admin, text: "hi" }));
    const id = update.message!.message_id;
    await waitUntil(() => shown(openai, id).at(-1) === Working, "the working reaction");
    expect(openai.texts(Admin, since)).toEqual([]);
    release();
    await waitUntil(() => shown(openai, id).at(-1) === Done, "the done reaction");
    expect(shown(openai, id)).toEqual([Seen, Working, Done]);
    expect(openai.texts(Admin, since)).toEqual(["all good"]);
    expect(openai.fake.reactions.on(String(Admin), id)).toEqual([Done]);
  });

  it("by default, shows nothing but the reply to a message answered within a second", async () => {
    model.respondWith(() => reply.text("quick"));
    const since = held.mark();
    const update = await held.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "quick?" }),
    );
    // No draft either: the preview of a model's text waits as long (docs/streaming.md). (The
    // harness shows typing at once, where the gateway's default waits a second too.)
    const calls = held.callsIn(Admin, since).filter((call) => call.method !== "sendChatAction");
    expect(calls.map((call) => call.method)).toEqual(["sendMessage"]);
    expect(held.texts(Admin, since)).toEqual(["quick"]);
    const id = update.message!.message_id;
    const reactions = held.fake
      .callsTo("setMessageReaction")
      .filter((c) => c.params.message_id === id);
    expect(reactions).toEqual([]);
  });

  it("by default, shows working once the turn ran a second, then done", async () => {
    const release = heldAnswer(model, reply.text("slow"));
    const since = held.mark();
    const update = await held.post((fake) => fake.sendPrivateText({ userId: Admin, text: "x" }));
    const id = update.message!.message_id;
    await waitUntil(() => shown(held, id).at(-1) === Working, "the working reaction");
    release();
    await waitUntil(() => shown(held, id).at(-1) === Done, "the done reaction");
    // 👀 was overtaken by 👨‍💻 before the second passed, so it never showed.
    expect(shown(held, id)).toEqual([Working, Done]);
    expect(held.texts(Admin, since)).toEqual(["slow"]);
  });

  it("ends in failed when the agent fails", async () => {
    const release = heldAnswer(model, reply.error(400, "model refused"));
    const since = openai.mark();
    const update = await openai.post((fake) => fake.sendPrivateText({ userId: Admin, text: "x" }));
    const id = update.message!.message_id;
    await waitUntil(() => shown(openai, id).at(-1) === Working, "the working reaction");
    release();
    await waitUntil(() => shown(openai, id).at(-1) === Failed, "the failed reaction");
    expect(shown(openai, id)).toEqual([Seen, Working, Failed]);
    expect(openai.texts(Admin, since)).toEqual([
      "⚠️ Something went wrong while handling that message.",
    ]);
  });

  it("answers as usual when Telegram refuses the reactions (400, then 429)", async () => {
    shell.fake.failNext("setMessageReaction", {
      kind: "error",
      status: 400,
      description: "Bad Request: REACTION_INVALID",
    });
    const since = shell.mark();
    const refused = await shell.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "echo refused" }),
    );
    expect(shell.texts(Admin, since)).toEqual(["refused"]);
    // Given up after the refusal: no reaction call for that message got through.
    expect(shown(shell, refused.message!.message_id)).toEqual([]);

    shell.fake.rateLimitNext("setMessageReaction", 1);
    const limited = await shell.handle((fake) =>
      fake.sendPrivateText({ userId: Admin, text: "echo limited" }),
    );
    expect(shell.texts(Admin, since)).toEqual(["refused", "limited"]);
    const id = limited.message!.message_id;
    // After the wait Telegram asked for, the latest status is set once.
    await waitUntil(() => shown(shell, id).at(-1) === Done, "the done reaction after the wait");
    const answers = shell.fake.callsTo("setMessageReaction").map((c) => c.status);
    expect(answers).toContain(400);
    expect(answers).toContain(429);
    expect(shown(shell, id)[0]).not.toBe(Seen);
  });

  it("sends a long command output cut in the text and whole as a file", async () => {
    const since = shell.mark();
    await shell.handle((fake) => fake.sendPrivateText({ userId: Admin, text: LongCommand }));
    const [text, ...more] = shell.texts(Admin, since);
    expect(more).toEqual([]);
    expect(text).toMatch(/\[… \d+ chars omitted …\]\n/);
    expect(text?.endsWith("\n20000")).toBe(true);
    expect(text).not.toContain("MEDIA:");
    const name = SavedLine.exec(text ?? "")?.[2];
    expect(name).toBeDefined();
    const files = shell.arrived(Admin, since);
    expect(files.map((f) => [f.method, f.filename])).toEqual([["sendDocument", name]]);
    expect(files[0]!.bytes.toString("utf8")).toBe(LongOutput);
  });
});

describe("status reactions and long outputs over Discord", () => {
  const Token = "discord-react-e2e-token-Rx7v";
  const Admin = "340000000000000001";
  let shell: DiscordGatewayHarness;
  let openai: DiscordGatewayHarness;
  let held: DiscordGatewayHarness;
  let model: FakeOpenAIServer;

  beforeAll(async () => {
    model = await FakeOpenAIServer.start();
    held = await DiscordGatewayHarness.start("e2e-dreact-held", Token, {
      profile: {
        admins: [`discord:${Admin}`],
        agent: { kind: "openai", baseUrl: model.baseUrl, apiKey: ApiKey, model: "fake-model" },
      },
    });
    // `afterMs: 0`: every status shows at once, so each step of the sequence can be checked.
    shell = await DiscordGatewayHarness.start("e2e-dreact", Token, {
      profile: { admins: [`discord:${Admin}`], reactions: { afterMs: 0 } },
    });
    openai = await DiscordGatewayHarness.start("e2e-dreact-ai", Token, {
      profile: {
        admins: [`discord:${Admin}`],
        reactions: { afterMs: 0 },
        agent: { kind: "openai", baseUrl: model.baseUrl, apiKey: ApiKey, model: "fake-model" },
      },
    });
  });

  afterAll(async () => {
    await shell?.close();
    await openai?.close();
    await held?.close();
    await model?.close();
  });

  const changes = (fake: FakeDiscord, messageId: string) =>
    fake.reactions.changes
      .filter((c) => c.messageId === messageId)
      .map((c) => `${c.op === "add" ? "+" : "-"}${c.emoji}`);

  it("by default, reacts on nothing answered within a second, and on a slower turn from working", async () => {
    const { fake, gateway } = held;
    model.respondWith(() => reply.text("quick"));
    const quick = fake.sendDirectMessage({ content: "quick?", authorId: Admin });
    await waitUntil(() => fake.messagesIn(quick.channelId).length === 1, "the quick reply");
    await gateway.idle();
    const reactionCalls = (id: string) =>
      fake.calls.filter((c) => c.path.includes(`/messages/${id}/reactions/`));
    expect(reactionCalls(quick.id)).toEqual([]);

    const release = heldAnswer(model, reply.text("slow"));
    const slow = fake.sendDirectMessage({ content: "slow?", authorId: Admin });
    await waitUntil(() => changes(fake, slow.id).includes(`+${Working}`), "the working reaction");
    release();
    await waitUntil(
      () => fake.reactions.on(slow.channelId, slow.id).join("") === Done,
      "only the done reaction",
    );
    // 👀 was overtaken by 👨‍💻 before the second passed: one add and one remove fewer.
    expect(changes(fake, slow.id)).toEqual([`+${Working}`, `+${Done}`, `-${Working}`]);
    expect(reactionCalls(slow.id).filter((c) => c.status < 300)).toHaveLength(3);
    expect(fake.messagesIn(slow.channelId).map((m) => m.content)).toEqual(["quick", "slow"]);
  });

  it("follows a turn with the bot's own reaction, removing the one before", async () => {
    const { fake } = openai;
    const release = heldAnswer(model, reply.text("fine"));
    const sent = fake.sendDirectMessage({ content: "hello", authorId: Admin });
    await waitUntil(() => changes(fake, sent.id).includes(`+${Working}`), "the working reaction");
    release();
    await waitUntil(
      () => fake.reactions.on(sent.channelId, sent.id).join("") === Done,
      "only the done reaction",
    );
    expect(changes(fake, sent.id)).toEqual([
      `+${Seen}`,
      `+${Working}`,
      `-${Seen}`,
      `+${Done}`,
      `-${Working}`,
    ]);
    expect(fake.messagesIn(sent.channelId).map((m) => m.content)).toEqual(["fine"]);
  });

  it("ends in failed when the agent fails", async () => {
    const { fake } = openai;
    const release = heldAnswer(model, reply.error(400, "model refused"));
    const sent = fake.sendDirectMessage({ content: "break", authorId: Admin });
    await waitUntil(() => changes(fake, sent.id).includes(`+${Working}`), "the working reaction");
    release();
    await waitUntil(
      () => fake.reactions.on(sent.channelId, sent.id).join("") === Failed,
      "only the failed reaction",
    );
  });

  it("answers as usual when Discord refuses a reaction (400) or rate-limits one (429)", async () => {
    const { fake, gateway } = shell;
    const dm = fake.world.dmChannel(Admin);
    fake.rest.injectFailure({
      kind: "client_error",
      method: "PUT",
      path: /\/reactions\//,
      status: 400,
    });
    const refused = fake.sendDirectMessage({ content: "echo refused", authorId: Admin });
    await waitUntil(() => fake.messagesIn(dm).length === 1, "the first reply");
    await gateway.idle();
    expect(fake.messagesIn(dm).map((m) => m.content)).toEqual(["refused"]);
    expect(changes(fake, refused.id)).toEqual([]);

    fake.rest.injectFailure({
      kind: "rate_limit",
      method: "PUT",
      path: /\/reactions\//,
      retryAfterSeconds: 0.5,
    });
    const limited = fake.sendDirectMessage({ content: "echo limited", authorId: Admin });
    await waitUntil(() => fake.messagesIn(dm).length === 2, "the second reply");
    expect(fake.messagesIn(dm).map((m) => m.content)).toEqual(["refused", "limited"]);
    await waitUntil(
      () => fake.reactions.on(dm, limited.id).join("") === Done,
      "the done reaction after the wait",
    );
    const injected = fake.calls.filter((c) => c.path.includes("/reactions/")).map((c) => c.status);
    expect(injected).toContain(400);
    expect(injected).toContain(429);
  });

  it("sends a long command output cut in the text and whole as an attachment", async () => {
    const { fake, gateway } = shell;
    const dm = fake.world.dmChannel(Admin);
    const before = fake.messagesIn(dm).length;
    fake.sendDirectMessage({ content: LongCommand, authorId: Admin });
    await waitUntil(
      () =>
        fake
          .messagesIn(dm)
          .slice(before)
          .some((m) => m.files.length > 0),
      "the output file",
    );
    await gateway.idle();
    const posted = fake.messagesIn(dm).slice(before);
    // As Discord shows it: `format: plain` escapes Markdown so it shows as written.
    const text = posted.map((m) => asShown(m.content)).join("\n");
    expect(text).toMatch(/\[… \d+ chars omitted …\]/);
    expect(text).not.toContain("MEDIA:");
    const name = SavedLine.exec(text)?.[2];
    const files = posted.flatMap((m) => m.files);
    expect(files.map((f) => f.filename)).toEqual([name]);
    expect(files[0]!.bytes.toString("utf8")).toBe(LongOutput);
  });
});
