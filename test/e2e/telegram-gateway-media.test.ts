import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { waitFor } from "../../test-support/wait.js";
import { tinyPng } from "../fakes/telegram/media-fixtures.js";
import { pngWith, printfOf, WithheldNotice, writeCommand } from "./harness/sandbox-files.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 1001;
const Member = 1002;

/**
 * The whole gateway on Telegram — config → channel factory → the real TelegramChannel and
 * grammY against FakeTelegram, the shell agent in a real Docker sandbox — delivering the
 * files a command tags with MEDIA:, by kind, in albums, under the profile's upload caps.
 */
describe("gateway over Telegram: media from the sandbox", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-media", [
      {
        admins: [Admin],
        allowed: [Member],
        // Small upload caps (as for a tight deployment) so the limits can be crossed cheaply.
        // Its forum topic answers every message, without a mention.
        telegram: {
          photoMaxBytes: 1000,
          uploadMaxBytes: 100_000,
          groups: { requireMention: false },
        },
      },
    ]);
    bot = harness.bot();
  });

  afterAll(async () => {
    await harness?.close();
  });

  it("delivers a file written in the sandbox byte for byte as a document", async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: `printf '${printfOf(bytes)}' > /workspace/a.bin; echo MEDIA:/workspace/a.bin`,
      }),
    );
    const files = bot.arrived(Admin, since);
    expect(files.map((f) => [f.method, f.filename])).toEqual([["sendDocument", "a.bin"]]);
    expect(files[0]!.bytes.equals(bytes)).toBe(true);
    expect(bot.texts(Admin, since).join("\n")).not.toContain("MEDIA:");
  });

  it("delivers a PNG as a photo with the rest of the output as its caption, after typing", async () => {
    const png = tinyPng();
    const since = bot.mark();
    const update = await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: `${writeCommand("/workspace/dot.png", png)}; echo here is the dot; echo MEDIA:/workspace/dot.png`,
      }),
    );
    const files = bot.arrived(Admin, since);
    expect(files.map((f) => [f.method, f.filename])).toEqual([["sendPhoto", "dot.png"]]);
    expect(files[0]!.bytes.equals(png)).toBe(true);
    expect(files[0]!.params.caption).toBe("here is the dot");
    expect(files[0]!.params.reply_parameters).toMatchObject({
      message_id: update.message!.message_id,
    });
    // The typing request goes out beside the turn: it may still be on its way when the photo
    // arrives (seen once in a loaded run), never sent after it.
    const typingOf = (calls: ReturnType<TelegramBot["callsIn"]>) =>
      calls.findIndex((c) => c.method === "sendChatAction" && c.params.action === "typing");
    await waitFor(() => expect(typingOf(bot.callsIn(Admin, since))).toBeGreaterThanOrEqual(0));
    const calls = bot.callsIn(Admin, since);
    expect(typingOf(calls)).toBeLessThan(calls.findIndex((c) => c.method === "sendPhoto"));
  });

  it("answers a forum-topic message in the same topic, typing included", async () => {
    const group = -100_777;
    const topic = 55;
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendTopicText({
        chatId: group,
        threadId: topic,
        userId: Member,
        text: "printf topical > /workspace/t.txt; echo in the topic; echo MEDIA:/workspace/t.txt; echo MEDIA:/workspace/not-there.txt",
      }),
    );
    const calls = bot.callsIn(group, since);
    expect(calls.map((c) => c.method)).toContain("sendChatAction");
    for (const call of calls) expect(String(call.params.message_thread_id)).toBe(String(topic));
    const files = bot.arrived(group, since);
    expect(files.map((f) => [f.method, f.filename, f.bytes.toString()])).toEqual([
      ["sendDocument", "t.txt", "topical"],
    ]);
    const texts = bot.texts(group, since);
    // the delivered tag is gone from the caption; the unreachable one stays visible
    expect(texts[0]).toMatch(/^in the topic\n+MEDIA:\/workspace\/not-there\.txt$/);
    expect(texts[1]).toContain("Couldn't deliver not-there.txt");
  });

  it("sends 11 photos as an album of 10 plus one, and names the tag past the 20-file cap", async () => {
    const png = tinyPng();
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: [
          `mkdir -p /workspace/many && ${writeCommand("/workspace/many/dot", png)}`,
          "for i in $(seq 1 11); do { cat /workspace/many/dot; echo $i; } > /workspace/many/p$i.png; done",
          "for i in $(seq 1 10); do echo doc $i > /workspace/many/d$i.txt; done",
          "for i in $(seq 1 11); do echo MEDIA:/workspace/many/p$i.png; done",
          "for i in $(seq 1 10); do echo MEDIA:/workspace/many/d$i.txt; done",
        ].join("; "),
      }),
    );
    const arrived = bot.arrived(Admin, since);
    const photos = arrived.filter((f) => f.method !== "sendDocument");
    expect(photos.map((f) => f.method)).toEqual([...Array(10).fill("sendMediaGroup"), "sendPhoto"]);
    photos.forEach((f, i) => {
      expect(f.filename).toBe(`p${i + 1}.png`);
      expect(f.bytes.equals(Buffer.concat([png, Buffer.from(`${i + 1}\n`)]))).toBe(true);
    });
    const docs = arrived.filter((f) => f.method === "sendDocument");
    expect(docs.map((f) => f.filename)).toEqual(
      Array.from({ length: 9 }, (_, i) => `d${i + 1}.txt`),
    );
    expect(bot.texts(Admin, since).join("\n")).toContain(
      "⚠️ 1 more file was not sent (d10.txt): one reply sends at most 20 files.",
    );
  });

  it("sends a reply too long for a caption as text first, then the file without one", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: "printf cap > /workspace/c.txt; head -c 1500 /dev/zero | tr '\\0' a; echo; echo MEDIA:/workspace/c.txt",
      }),
    );
    const calls = bot
      .callsIn(Admin, since)
      .filter((c) => c.ok && c.method.startsWith("send") && c.method !== "sendChatAction");
    expect(calls.map((c) => c.method)).toEqual(["sendMessage", "sendDocument"]);
    expect(calls[0]!.params.text).toBe("a".repeat(1500));
    expect(calls[1]!.params.caption).toBeUndefined();
  });

  it("sends a file named twice (or through `./`) once", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: "printf once > /workspace/dup.txt; echo MEDIA:/workspace/dup.txt; echo MEDIA:/workspace/./dup.txt; echo 'MEDIA:`/workspace/dup.txt`'",
      }),
    );
    expect(bot.arrived(Admin, since).map((f) => [f.filename, f.bytes.toString()])).toEqual([
      ["dup.txt", "once"],
    ]);
  });

  it("resends a photo Telegram refuses as a document, same bytes", async () => {
    const odd = pngWith(Buffer.from("odd"));
    bot.fake.rejectPhotos((file) => file.filename === "odd.png");
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: `${writeCommand("/workspace/odd.png", odd)}; echo MEDIA:/workspace/odd.png`,
      }),
    );
    const files = bot.arrived(Admin, since);
    expect(files.map((f) => [f.method, f.filename])).toEqual([["sendDocument", "odd.png"]]);
    expect(files[0]!.bytes.equals(odd)).toBe(true);
    expect(bot.callsIn(Admin, since).some((c) => c.method === "sendPhoto" && !c.ok)).toBe(true);
  });

  it("delivers a MEDIA line the shell agent cut from the head of a long output", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: "printf early > /workspace/early.txt; echo MEDIA:/workspace/early.txt; seq 1 3000",
      }),
    );
    const files = bot.arrived(Admin, since);
    expect(files).toHaveLength(2);
    const early = files.find((f) => f.filename === "early.txt");
    const whole = files.find((f) => f !== early);
    expect(early?.bytes.toString()).toBe("early");
    // The cut output also arrives whole (docs/media.md, "Long command output").
    expect(whole?.filename).toMatch(/^output-.*\.txt$/);
    expect(whole?.bytes.toString()).toBe(
      ["MEDIA:/workspace/early.txt", ...Array.from({ length: 3000 }, (_, i) => i + 1)].join("\n"),
    );
    expect(bot.texts(Admin, since).join("\n")).toContain("3000");
  });

  it("answers a tag naming a FIFO, a directory or a device without hanging", async () => {
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: "mkfifo /workspace/pipe /tmp/pipe; echo MEDIA:/workspace/pipe; echo MEDIA:/tmp/pipe; echo MEDIA:/workspace; echo MEDIA:/dev/zero",
      }),
    );
    expect(bot.arrived(Admin, since)).toEqual([]);
    const texts = bot.texts(Admin, since).join("\n");
    expect(texts).toContain("Couldn't deliver pipe");
    expect(texts).toContain("Couldn't deliver workspace");
    expect(texts).toContain(WithheldNotice);
  });

  it("applies the profile's upload caps: a photo over photoMaxBytes goes as a document, a file over uploadMaxBytes is refused with its size", async () => {
    const wide = pngWith(randomBytes(2000));
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: [
          writeCommand("/workspace/wide.png", wide),
          "head -c 150000 /dev/zero > /workspace/big.bin",
          "echo MEDIA:/workspace/wide.png; echo MEDIA:/workspace/big.bin",
        ].join("; "),
      }),
    );
    const files = bot.arrived(Admin, since);
    expect(files.map((f) => [f.method, f.filename])).toEqual([["sendDocument", "wide.png"]]);
    expect(files[0]!.bytes.equals(wide)).toBe(true);
    expect(bot.texts(Admin, since).join("\n")).toContain(
      "Couldn't deliver big.bin: it is 150 KB, over the 100 KB limit for a document.",
    );
    expect(bot.everyUploadedByte().length).toBeLessThan(2_000_000);
  });

  it("copies a file on no mount out of the live container, under the same cap", async () => {
    const small = randomBytes(300);
    const since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: [
          writeCommand("/tmp/small.bin", small),
          "head -c 150000 /dev/zero > /tmp/huge.bin",
          "echo MEDIA:/tmp/small.bin; echo MEDIA:/tmp/huge.bin",
        ].join("; "),
      }),
    );
    const files = bot.arrived(Admin, since);
    expect(files.map((f) => [f.method, f.filename])).toEqual([["sendDocument", "small.bin"]]);
    expect(files[0]!.bytes.equals(small)).toBe(true);
    expect(bot.texts(Admin, since).join("\n")).toMatch(/Couldn't deliver huge\.bin: it is 150 KB/);
  });

  it("keeps spaces in a quoted path and honours [[as_document]] and [[audio_as_voice]]", async () => {
    let since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: `printf spaced > '/workspace/my report.txt'; echo "MEDIA:'/workspace/my report.txt'"`,
      }),
    );
    expect(
      bot.arrived(Admin, since).map((f) => [f.method, f.filename, f.bytes.toString()]),
    ).toEqual([["sendDocument", "my report.txt", "spaced"]]);

    since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: `${writeCommand("/workspace/doc.png", tinyPng())}; echo '[[as_document]]'; echo MEDIA:/workspace/doc.png`,
      }),
    );
    expect(bot.arrived(Admin, since).map((f) => [f.method, f.filename])).toEqual([
      ["sendDocument", "doc.png"],
    ]);

    since = bot.mark();
    await bot.handle((fake) =>
      fake.sendPrivateText({
        userId: Admin,
        text: "printf voice > /workspace/note.ogg; echo '[[audio_as_voice]]'; echo MEDIA:/workspace/note.ogg",
      }),
    );
    expect(bot.arrived(Admin, since).map((f) => [f.method, f.filename])).toEqual([
      ["sendVoice", "note.ogg"],
    ]);
    expect(bot.texts(Admin, since).join("\n")).not.toContain("[[");
  });
});
