import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAIServer, reply } from "../fakes/openai/index.js";
import { DiscordGatewayHarness } from "./harness/discord-gateway.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1101;
const ShellAdmin = 1102;

/** What a model commonly writes: every construct docs/formatting.md names. */
const ModelAnswer = [
  "## Plan",
  "",
  "Run **`make build`** first, then check snake_case_names and 2 * 3 = 6 (a stray _ too).",
  "",
  "- step one",
  "  - nested step",
  "    1. deep",
  "",
  "| file | size |",
  "|---|--:|",
  "| a.txt | 12 |",
  "",
  "```python",
  'print("```")',
  "```",
  "",
  "Literal <b>not bold</b> & [the docs](https://example.org/?a=1&b=2).",
].join("\n");

const ModelAnswerSeen = [
  "Plan",
  "",
  "Run make build first, then check snake_case_names and 2 * 3 = 6 (a stray _ too).",
  "",
  "• step one",
  "   • nested step",
  "      1. deep",
  "",
  "file   size",
  "─────  ────",
  "a.txt    12",
  "",
  'print("```")',
  "",
  "Literal <b>not bold</b> & the docs.",
].join("\n");

/** Model Markdown rendered on Telegram end to end (docs/formatting.md). */
describe("formatted replies over Telegram", () => {
  let model: FakeOpenAIServer;
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;
  let shell: TelegramBot;

  beforeAll(async () => {
    model = await FakeOpenAIServer.start();
    harness = await TelegramGatewayHarness.start("t-format", [
      {
        admins: [Admin],
        agent: { kind: "openai", baseUrl: model.baseUrl, model: "fake-model" },
      },
      { admins: [ShellAdmin] },
    ]);
    bot = harness.bot(0);
    shell = harness.bot(1);
  });

  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  it("shows the model's Markdown formatted: what Telegram parsed is what the user sees", async () => {
    model.enqueue(reply.text(ModelAnswer));
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "plan it" }));
    const sends = bot.callsIn(Admin, since).filter((c) => c.method === "sendMessage");
    expect(sends.map((c) => [c.ok, c.params.parse_mode])).toEqual([[true, "HTML"]]);
    const shown = bot.fake.botMessagesIn(Admin).at(-1);
    expect(shown?.text).toBe(ModelAnswerSeen);
    const at = (s: string) => ModelAnswerSeen.indexOf(s);
    expect(shown?.entities).toEqual([
      { type: "bold", offset: 0, length: 4 },
      { type: "code", offset: at("make build"), length: 10 },
      { type: "pre", offset: at("file   size"), length: 35 },
      { type: "pre", offset: at('print("'), length: 12, language: "python" },
      { type: "text_link", offset: at("the docs"), length: 8, url: "https://example.org/?a=1&b=2" },
    ]);
  });

  it("sends a reply once as plain text when Telegram refuses its markup", async () => {
    bot.fake.failNext("sendMessage", {
      kind: "error",
      status: 400,
      description: `Bad Request: can't parse entities: Unsupported start tag "pre" at byte offset 0`,
    });
    model.enqueue(reply.text("**Done**: `ok`"));
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "finish" }));
    const sends = bot.callsIn(Admin, since).filter((c) => c.method === "sendMessage");
    expect(sends.map((c) => [c.status, c.params.parse_mode, c.params.text])).toEqual([
      [400, "HTML", "<b>Done</b>: <code>ok</code>"],
      [200, undefined, "Done: ok"],
    ]);
    expect(bot.fake.botMessagesIn(Admin).at(-1)).toMatchObject({ text: "Done: ok" });
    expect(bot.fake.botMessagesIn(Admin).at(-1)).not.toHaveProperty("entities");
  });

  it("sends a reply whose Markdown shows no text (an empty code block) as written", async () => {
    model.enqueue(reply.text("```\n```"));
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "empty block" }));
    const sends = bot.callsIn(Admin, since).filter((c) => c.method === "sendMessage" && c.ok);
    expect(sends.map((c) => c.params.text)).toEqual(["```\n```"]);
  });

  it("formats a caption, and sends it plain once when Telegram refuses its markup", async () => {
    bot.fake.failNext("sendDocument", {
      kind: "error",
      status: 400,
      description: `Bad Request: can't parse entities: Can't find end tag corresponding to start tag "b"`,
    });
    model.enqueue(
      reply.toolCall("write_file", { path: "/workspace/r.txt", content: "r" }),
      reply.text("**Report** <ready>\nMEDIA:/workspace/r.txt"),
    );
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "report" }));
    const sends = bot.callsIn(Admin, since).filter((c) => c.method === "sendDocument");
    expect(sends.map((c) => [c.status, c.params.parse_mode, c.params.caption])).toEqual([
      [400, "HTML", "<b>Report</b> &lt;ready&gt;"],
      [200, undefined, "Report <ready>"],
    ]);
    expect(bot.arrived(Admin, since).map((f) => f.filename)).toEqual(["r.txt"]);
  });

  it("splits a long code block into messages that each show a code block with its language", async () => {
    const lines = Array.from({ length: 500 }, (_, i) => `echo "line ${i}" && x=<${i}>`);
    model.enqueue(reply.text(`Script:\n\n\`\`\`bash\n${lines.join("\n")}\n\`\`\``));
    const before = bot.fake.botMessagesIn(Admin).length;
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "script" }));
    const shown = bot.fake.botMessagesIn(Admin).slice(before);
    expect(shown.length).toBeGreaterThan(2);
    for (const [index, message] of shown.entries()) {
      const text = String(message.text);
      expect(text.length).toBeLessThanOrEqual(4096);
      const pre = (message.entities as { type: string; offset: number; language?: string }[]).find(
        (e) => e.type === "pre",
      );
      expect(pre).toMatchObject({ language: "bash", offset: index === 0 ? 9 : 0 });
    }
    const code = shown.map((m) => String(m.text)).join("\n");
    expect(code).toBe(`Script:\n\n${lines.join("\n")}`);
  });

  it("shows a shell command's output as printed (format plain)", async () => {
    const since = shell.mark();
    await shell.handle((fake) =>
      fake.sendPrivateText({ userId: ShellAdmin, text: "printf '**not bold** <b>x</b>'" }),
    );
    const sends = shell.callsIn(ShellAdmin, since).filter((c) => c.method === "sendMessage");
    expect(sends.map((c) => c.params.parse_mode)).toEqual([undefined]);
    expect(shell.fake.botMessagesIn(ShellAdmin).at(-1)).toMatchObject({
      text: "**not bold** <b>x</b>",
    });
  });
});

/** Model Markdown on Discord end to end: its own Markdown, tables flattened. */
describe("formatted replies over Discord", () => {
  const Token = "discord-format-e2e-token-Qw7c";
  const User = "300000000000000101";
  let model: FakeOpenAIServer;
  let harness: DiscordGatewayHarness;

  beforeAll(async () => {
    model = await FakeOpenAIServer.start();
    harness = await DiscordGatewayHarness.start("e2e-dformat", Token, {
      profile: {
        admins: [`discord:${User}`],
        agent: { kind: "openai", baseUrl: model.baseUrl, model: "fake-model" },
      },
    });
  });

  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  it("passes the model's Markdown through, with its table flattened and deep headings bold", async () => {
    model.enqueue(
      reply.text("#### Sizes\n\n| file | size |\n|---|--:|\n| a.txt | 12 |\n\nSee **this**."),
    );
    const { fake } = harness;
    const dm = fake.world.dmChannel(User);
    fake.sendDirectMessage({ content: "sizes?", authorId: User });
    await fake.waitForCall(() => fake.messagesIn(dm).length > 0);
    await harness.gateway.idle();
    expect(fake.messagesIn(dm).map((m) => m.content)).toEqual([
      "**Sizes**\n\n```\nfile   size\n─────  ────\na.txt    12\n```\n\nSee **this**.",
    ]);
  });

  it("splits a long code block with its fence closed and reopened in every message", async () => {
    const lines = Array.from({ length: 300 }, (_, i) => `print(${i})`);
    model.enqueue(reply.text(`\`\`\`py\n${lines.join("\n")}\n\`\`\``));
    const { fake } = harness;
    const dm = fake.world.dmChannel(User);
    const before = fake.messagesIn(dm).length;
    fake.sendDirectMessage({ content: "code", authorId: User });
    await fake.waitForCall(() => fake.messagesIn(dm).length > before);
    await harness.gateway.idle();
    const posts = fake
      .messagesIn(dm)
      .slice(before)
      .map((m) => m.content);
    expect(posts.length).toBeGreaterThan(1);
    for (const post of posts) {
      expect(post.length).toBeLessThanOrEqual(2000);
      expect(post).toMatch(/^```py\n[\s\S]*\n```$/);
    }
  });
});
