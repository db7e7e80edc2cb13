import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeDiscord, type RecordedCall } from "../fakes/discord/index.js";
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
let fake: FakeDiscord;
let model: FakeOpenAIServer;
const disposers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  fake = await FakeDiscord.start({ token: Token });
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

const creates = (dm: string): RecordedCall[] =>
  fake.calls.filter(
    (call) =>
      call.method === "POST" && call.path === `/channels/${dm}/messages` && call.status === 200,
  );
const ofMessages = (dm: string, method: string): RecordedCall[] =>
  fake.calls.filter(
    (call) => call.method === method && call.path.startsWith(`/channels/${dm}/messages/`),
  );

// SIGKILL-and-restart tests of discord-streaming.test.ts, in the long suite with the others (test/long/README.md).
describe("streamed replies on Discord, through a SIGKILL", () => {
  it("after a SIGKILL mid-stream: no duplicate, the stale preview deleted, the user told", async () => {
    const gateway = await install("dc-stream-kill");
    await gateway.start();
    const dm = fake.world.dmChannel(HumanId);
    model.enqueue(
      reply.text(LongAnswer, { stream: { chunkChars: 100, everyMs: 100, hangAfterChars: 6000 } }),
      reply.text("the answer, in full"),
    );
    fake.sendDirectMessage({ content: "long one", authorId: HumanId });
    // Two preview messages (a rollover past 2,000), and the second edited: it was recorded.
    await waitUntil(() => creates(dm).length >= 2, "the preview's rollover", 60_000);
    const [first, second] = creates(dm).map((call) => call.messageId ?? "");
    await waitUntil(
      () =>
        ofMessages(dm, "PATCH").some(
          (call) => call.path.endsWith(`/${second}`) && call.status === 200,
        ),
      "the rollover to be edited",
      60_000,
    );
    await gateway.kill();

    await gateway.start();
    const expected = ["⏹ cut off by a restart; running it again", "the answer, in full"];
    await waitUntil(
      () => JSON.stringify(shown(dm)) === JSON.stringify(expected),
      "the notice and the final alone",
      60_000,
    );
    expect(fake.messagesIn(dm).map((message) => message.id)[0]).toBe(first);
    expect(ofMessages(dm, "DELETE").map((call) => call.path.split("/").at(-1))).toContain(second);
    expect(
      creates(dm).filter((call) => (call.payload as { content?: string }).content === expected[1]),
    ).toHaveLength(1);
  }, 180_000);
});
