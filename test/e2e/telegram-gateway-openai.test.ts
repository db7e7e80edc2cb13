import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FakeOpenAIServer, reply } from "../fakes/openai/index.js";
import { tinyPng } from "../fakes/telegram/media-fixtures.js";
import { waitUntil } from "./harness/gateway-home.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;
const Member = 1002;
const ApiKey = "sk-e2e-telegram-gateway-9d1e-must-never-leak";

/**
 * The `openai` agent end to end: the profile's config names an OpenAI-compatible endpoint (the
 * fake), the model's tool calls run in the real Docker sandbox, and the file its final reply
 * tags reaches Telegram through the real TelegramChannel and grammY.
 */
describe("gateway over Telegram with the openai agent", () => {
  let model: FakeOpenAIServer;
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    model = await FakeOpenAIServer.start();
    harness = await TelegramGatewayHarness.start("t-openai", [
      {
        admins: [Admin],
        allowed: [Member],
        agent: { kind: "openai", baseUrl: model.baseUrl, apiKey: ApiKey, model: "fake-model" },
      },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
    await model?.close();
  });

  it("delivers a file the model wrote with write_file and tagged in its final reply", async () => {
    const content = "quarterly numbers\n1,2,3\n";
    model.enqueue(
      reply.toolCall("write_file", { path: "/workspace/report.csv", content }),
      reply.text("Here is the report.\nMEDIA:/workspace/report.csv"),
    );
    const since = bot.mark();
    const requestsBefore = model.requests.length;
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "make the report" }));

    const files = bot.arrived(Admin, since);
    expect(files.map((f) => [f.method, f.filename, f.bytes.toString()])).toEqual([
      ["sendDocument", "report.csv", content],
    ]);
    expect(files[0]!.params.caption).toBe("Here is the report.");
    expect(readFileSync(join(bot.profileSlotDir(), "workspace", "report.csv"), "utf8")).toBe(
      content,
    );
    const [first, second] = model.requests.slice(requestsBefore);
    expect(first?.authorization).toBe(`Bearer ${ApiKey}`);
    expect(first?.body.messages.at(-1)).toMatchObject({ role: "user", content: "make the report" });
    expect(second?.body.messages.some((m) => m.role === "tool")).toBe(true);
  });

  it("delivers a PNG the model made with the terminal tool as a photo", async () => {
    const png = tinyPng();
    model.enqueue(
      reply.toolCall("terminal", {
        command: `mkdir -p /workspace/out && echo ${png.toString("base64")} | base64 -d > /workspace/out/chart.png`,
      }),
      reply.text("MEDIA:/workspace/out/chart.png"),
    );
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "draw a chart" }));
    const files = bot.arrived(Admin, since);
    expect(files.map((f) => [f.method, f.filename])).toEqual([["sendPhoto", "chart.png"]]);
    expect(files[0]!.bytes.equals(png)).toBe(true);
    expect(existsSync(join(bot.profileSlotDir(), "workspace", "out", "chart.png"))).toBe(true);
  });

  it("does not deliver a MEDIA: tag that only appears in tool output", async () => {
    model.enqueue(
      reply.toolCall("terminal", {
        command: "printf tool > /workspace/tool.txt; echo MEDIA:/workspace/tool.txt",
      }),
      reply.text("I made tool.txt but will not send it."),
    );
    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "make a file" }));
    expect(bot.arrived(Admin, since)).toEqual([]);
    expect(bot.texts(Admin, since)).toEqual(["I made tool.txt but will not send it."]);
  });

  it("keeps the conversation per session, and an admin's /reset clears it", async () => {
    const contents = (index: number) =>
      (model.requests[index]?.body.messages ?? []).map((m) => m.content ?? "").join("\n");
    model.enqueue(reply.text("noted"), reply.text("it was 42"), reply.text("I don't know"));
    await bot.handle((fake) =>
      fake.sendPrivateText({ userId: Member, text: "remember the number 42" }),
    );
    const second = model.requests.length;
    await bot.handle((fake) => fake.sendPrivateText({ userId: Member, text: "which number?" }));
    expect(contents(second)).toContain("remember the number 42");
    expect(contents(second)).toContain("noted");

    const since = bot.mark();
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "/reset confirm" }));
    expect(bot.texts(Admin, since)[0]).toMatch(/^♻️ Reset: new conversation started/);
    // the admin's reset cleared the admin's conversation, not the member's
    const third = model.requests.length;
    await bot.handle((fake) => fake.sendPrivateText({ userId: Admin, text: "what did I make?" }));
    expect(contents(third)).not.toContain("make the report");
    expect(contents(third)).not.toContain("remember the number 42");
  });

  it("/stop aborts a turn waiting on the model", async () => {
    model.enqueue(reply.hang());
    const since = bot.mark();
    const before = model.requests.length;
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "think hard" }));
    await model.waitForRequests(before + 1);
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "/stop" }));
    await waitUntil(() => bot.texts(Admin, since).length > 0, "the /stop answer");
    await harness.gateway.idle();
    expect(bot.texts(Admin, since)).toEqual(["🛑 Stopped: aborted the running turn."]);
    await waitUntil(() => model.requests[before]!.clientAborted, "the model request aborted");
  });

  it("answers a 1 MB final reply full of MEDIA: noise, and another session is answered meanwhile", async () => {
    const line = "MEDIA:/x MEDIA:`/y MEDIA:\"/z MEDIA:'/w ``` MEDIA:\n";
    const noise = line.repeat(Math.ceil((1024 * 1024) / line.length));
    model.respondWith((request) => {
      const last = request.body.messages.at(-1)?.content ?? "";
      return reply.text(last === "noise please" ? noise : "the other session is answered");
    });
    const since = bot.mark();
    await bot.post((fake) => fake.sendPrivateText({ userId: Admin, text: "noise please" }));
    await bot.post((fake) => fake.sendPrivateText({ userId: Member, text: "anyone there?" }));
    await waitUntil(
      () => bot.texts(Member, since).includes("the other session is answered"),
      "the other session's answer",
      60_000,
    );
    await waitUntil(() => bot.texts(Admin, since).length > 0, "the noisy reply", 60_000);
    await harness.gateway.idle();
    const texts = bot.texts(Admin, since);
    expect(texts.join("\n")).toContain("MEDIA:/x");
    expect(texts.at(-1)).toContain("Couldn't deliver x");
    // The one file is the long reply itself (docs/media.md, "Long replies"): no tag's path
    // was uploaded.
    const arrived = bot.arrived(Admin, since);
    expect(arrived.map((file) => [file.method, file.filename])).toEqual([
      ["sendDocument", "reply.txt"],
    ]);
    expect(arrived[0]?.bytes.toString("utf8")).toContain("MEDIA:/x");
  });

  it("never writes the API key or the bot token into the logs", () => {
    const text = harness.logs.join("");
    expect(text).not.toContain(ApiKey);
    for (const secret of harness.secrets) expect(text).not.toContain(secret);
  });
});
