import { ReplyFileName, replyParts, splitText } from "@mediagate/gateway";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type DiscordEditLimits, FakeDiscord, type RecordedCall } from "../fakes/discord/index.js";
import { FakeOpenAIServer, reply } from "../fakes/openai/index.js";
import { CliInstall } from "./harness/cli-install.js";
import { waitUntil } from "./harness/gateway-home.js";

/**
 * Streamed replies (docs/streaming.md) on Discord through the real CLI, discord.js and
 * FakeDiscord, with the openai agent streaming from the fake model into a DM: one message
 * edited and rolled over past 2,000 characters, the final as new messages (its text split as
 * `delivery.maxTextChunks` allows, the rest as reply.txt), every preview message deleted,
 * Discord's five edits per five seconds kept, a 429 never losing the final, a SIGKILL mid-stream.
 */

const Token = "discord-stream-token-Zk4q";
const HumanId = "300000000000000002";
const DiscordLength = 2000;
const DefaultMaxTextChunks = 4;
let fake: FakeDiscord;
let limits: DiscordEditLimits;
let model: FakeOpenAIServer;
const disposers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  fake = await FakeDiscord.start({ token: Token });
  limits = fake.limitEdits();
  model = await FakeOpenAIServer.start();
});

afterEach(async () => {
  await Promise.all(disposers.splice(0).map((dispose) => dispose()));
  await model.close();
  await fake.close();
});

async function install(
  prefix: string,
  settings: Record<string, unknown> = {},
): Promise<CliInstall> {
  const made = await CliInstall.create(
    prefix,
    {
      discord: { token: Token, apiRoot: fake.apiRoot },
      allowedUsers: [`discord:${HumanId}`],
      agent: { kind: "openai", baseUrl: model.baseUrl, model: "fake-model" },
      stream: "edit",
    },
    settings,
  );
  disposers.push(() => made.dispose());
  return made;
}

/** 10,000 characters in numbered lines, so every split point and order shows. */
const LongAnswer = Array.from(
  { length: 200 },
  (_, i) => `line ${String(i).padStart(3, "0")}: ${"streamed text ".repeat(3).trim()}`,
)
  .join("\n")
  .slice(0, 10_000);

/** Slow enough for the preview to roll over past 8,000 characters before the model is done. */
const Streamed = { chunkChars: 200, everyMs: 200 } as const;

/** What the DM shows now, in order: each message's text, or `file:<name>` for an upload. */
function shown(dm: string): string[] {
  return fake
    .messagesIn(dm)
    .map((message) =>
      message.files.length > 0
        ? `file:${message.files.map((file) => file.filename).join(",")}`
        : message.content,
    );
}

/** The final reply as the DM must show it: its text messages, then reply.txt if cut. */
function finalOf(text: string, maxChunks: number): string[] {
  return replyParts(text, { maxLength: DiscordLength, maxChunks }).map((part) =>
    part.kind === "text" ? part.text : `file:${part.filename}`,
  );
}

const creates = (dm: string): RecordedCall[] =>
  fake.calls.filter(
    (call) =>
      call.method === "POST" && call.path === `/channels/${dm}/messages` && call.status === 200,
  );
const ofMessages = (dm: string, method: string): RecordedCall[] =>
  fake.calls.filter(
    (call) => call.method === method && call.path.startsWith(`/channels/${dm}/messages/`),
  );

/** The preview's messages: created, then deleted (the final's stay). */
function previewIds(dm: string): string[] {
  const kept = new Set(fake.messagesIn(dm).map((message) => message.id));
  return creates(dm)
    .map((call) => call.messageId ?? "")
    .filter((id) => !kept.has(id));
}

describe("streamed replies on Discord", () => {
  it("rolls an edited message over past 2,000 characters, then shows the six final messages alone, in order", async () => {
    const gateway = await install("dc-stream-six", { delivery: { maxTextChunks: 8 } });
    await gateway.start();
    const dm = fake.world.dmChannel(HumanId);
    model.enqueue(reply.text(LongAnswer, { stream: Streamed }));
    fake.sendDirectMessage({ content: "tell me everything", authorId: HumanId });
    const parts = splitText(LongAnswer, { maxLength: DiscordLength });
    expect(parts).toHaveLength(6);
    await waitUntil(
      () => JSON.stringify(shown(dm)) === JSON.stringify(parts),
      "the six final messages alone",
      90_000,
    );

    const previews = previewIds(dm);
    expect(previews.length).toBeGreaterThan(1);
    // Every preview message deleted once, none of the final's.
    // (Only messages: the status reactions on the user's message are deleted at their own path.)
    const deleted = ofMessages(dm, "DELETE")
      .filter((call) => !call.path.includes("/reactions/"))
      .map((call) => call.path.split("/").at(-1));
    expect(deleted.sort()).toEqual([...previews].sort());
    // Each final part created once, after the preview's last edit; the first replies to the user.
    const finals = creates(dm).filter((call) => !previews.includes(call.messageId ?? ""));
    expect(finals.map((call) => (call.payload as { content: string }).content)).toEqual(parts);
    const lastEdit = Math.max(...ofMessages(dm, "PATCH").map((call) => fake.calls.indexOf(call)));
    expect(finals.every((call) => fake.calls.indexOf(call) > lastEdit)).toBe(true);
    expect(fake.messagesIn(dm)[0]?.replyTo).toBeDefined();
    expect(ofMessages(dm, "PATCH").filter((call) => call.status === 200).length).toBeGreaterThan(0);
    // Discord's pace: never more than five edits in five seconds, none refused.
    expect(limits.refused).toBe(0);
    expect(limits.most(dm)).toBeLessThanOrEqual(5);
  }, 150_000);

  it("past delivery.maxTextChunks: the preview takes no more messages than the final, which ends with reply.txt", async () => {
    const gateway = await install("dc-stream-cut");
    await gateway.start();
    const dm = fake.world.dmChannel(HumanId);
    model.enqueue(reply.text(LongAnswer, { stream: Streamed }));
    fake.sendDirectMessage({ content: "tell me everything", authorId: HumanId });
    const expected = finalOf(LongAnswer, DefaultMaxTextChunks);
    expect(expected).toHaveLength(DefaultMaxTextChunks + 1);
    expect(expected.at(-1)).toBe(`file:${ReplyFileName}`);
    await waitUntil(
      () => JSON.stringify(shown(dm)) === JSON.stringify(expected),
      "the four messages and reply.txt alone",
      90_000,
    );
    const file = fake.messagesIn(dm).at(-1)?.files[0];
    expect(file?.bytes.toString("utf8")).toBe(LongAnswer);
    // The preview reached the cut (its last message edited to end as the final's does) but
    // never posted a fifth message.
    const previews = previewIds(dm);
    expect(previews).toHaveLength(DefaultMaxTextChunks);
    const lastPreviewEdit = ofMessages(dm, "PATCH")
      .filter((call) => call.path.endsWith(`/${previews.at(-1)}`) && call.status === 200)
      .at(-1);
    expect((lastPreviewEdit?.payload as { content?: string } | undefined)?.content).toContain(
      ReplyFileName,
    );
    expect(limits.refused).toBe(0);
    expect(limits.most(dm)).toBeLessThanOrEqual(5);
  }, 150_000);

  it("never loses the final to 429s on the preview's edits", async () => {
    const gateway = await install("dc-stream-429");
    await gateway.start();
    const dm = fake.world.dmChannel(HumanId);
    fake.injectFailure({
      kind: "rate_limit",
      method: "PATCH",
      path: /\/messages\/\d+$/,
      times: 2,
      retryAfterSeconds: 1,
    });
    model.enqueue(reply.text(LongAnswer, { stream: { chunkChars: 200, everyMs: 60 } }));
    fake.sendDirectMessage({ content: "go", authorId: HumanId });
    const expected = finalOf(LongAnswer, DefaultMaxTextChunks);
    await waitUntil(
      () => JSON.stringify(shown(dm)) === JSON.stringify(expected),
      "the final messages alone",
      90_000,
    );
    expect(ofMessages(dm, "PATCH").some((call) => call.status === 429)).toBe(true);
    expect(shown(dm)).toEqual(expected);
  }, 150_000);
});
