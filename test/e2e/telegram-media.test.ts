import { randomBytes } from "node:crypto";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { type ChatTarget, TelegramChannel } from "@mediagate/gateway";
import { type MediaKind, planMedia, type ReadyMedia } from "@mediagate/media";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { FakeTelegram, type RecordedCall } from "../fakes/telegram/index.js";
import {
  captureLogs,
  planOf,
  readyItem,
  scratchDir,
  tinyPng,
} from "../fakes/telegram/media-fixtures.js";

let fake: FakeTelegram;
let channel: TelegramChannel;
let scratch: Awaited<ReturnType<typeof scratchDir>>;
const disposers: (() => Promise<void>)[] = [];

const topic: ChatTarget = { platform: "telegram", chatId: "-100400", threadId: "77" };

beforeEach(async () => {
  fake = new FakeTelegram();
  const { apiRoot } = await fake.start();
  scratch = await scratchDir();
  channel = new TelegramChannel({
    token: fake.token,
    apiRoot,
    profile: "work",
    logger: captureLogs().logger,
    retry: { minDelayMs: 5, maxDelayMs: 20 },
  });
});

afterEach(async () => {
  await Promise.all(disposers.splice(0).map((dispose) => dispose()));
  await fake.stop();
  await scratch.cleanup();
});

async function deliver(text: string, items: readonly ReadyMedia[], target: ChatTarget = topic) {
  const plan = planOf(text, items);
  disposers.push(() => plan.dispose());
  return channel.deliver({
    sessionKey: "agent:work:telegram:group:-100400:user:77",
    profile: "work",
    target,
    text,
    plan,
  });
}

const item = (kind: MediaKind, filename: string, bytes = randomBytes(3000)) =>
  readyItem(scratch.dir, kind, filename, bytes);

/** Every file that arrived in successful calls, in order. */
const uploads = (calls: readonly RecordedCall[]) =>
  calls.filter((c) => c.ok).flatMap((c) => c.files.map((f) => ({ method: c.method, ...f })));

describe("TelegramChannel media delivery (real grammY against the fake)", () => {
  it.each([
    ["photo", "sendPhoto", "photo"],
    ["animation", "sendAnimation", "animation"],
    ["video", "sendVideo", "video"],
    ["audio", "sendAudio", "audio"],
    ["voice", "sendVoice", "voice"],
    ["document", "sendDocument", "document"],
  ] as const)("sends a %s with %s, bytes intact, text as caption", async (kind, method, field) => {
    const bytes = randomBytes(150_000);
    const report = await deliver("here it is", [await item(kind, `my file.${kind}`, bytes)]);
    expect(report.outcomes).toEqual([
      { status: "delivered", path: `/workspace/my file.${kind}`, kind },
    ]);
    const [call] = fake.callsTo(method);
    expect(call?.ok).toBe(true);
    expect(call?.params).toMatchObject({
      chat_id: "-100400",
      message_thread_id: "77",
      caption: "here it is",
    });
    expect(call?.files).toHaveLength(1);
    expect(call?.files[0]).toMatchObject({ field, filename: `my file.${kind}` });
    expect(call?.files[0]?.bytes.equals(bytes)).toBe(true);
    expect(fake.callsTo("sendMessage")).toHaveLength(0);
  });

  it("streams a document of many chunks byte for byte through a slow uplink, from its few reused buffers", async () => {
    // 6 MiB is 48 chunks through a ring of 4 buffers: a chunk still queued on the socket when
    // its buffer came round again would arrive with another chunk's bytes.
    const bytes = randomBytes(6 * 1024 * 1024 + 12_345);
    fake.throttleUploads(24 * 1024 * 1024);
    try {
      const report = await deliver("", [await item("document", "big.bin", bytes)]);
      expect(report.outcomes).toEqual([
        { status: "delivered", path: "/workspace/big.bin", kind: "document" },
      ]);
    } finally {
      fake.throttleUploads(undefined);
    }
    const [call] = fake.callsTo("sendDocument");
    expect(call?.files[0]?.bytes.length).toBe(bytes.length);
    expect(call?.files[0]?.bytes.equals(bytes)).toBe(true);
  });

  it("sends 23 photos as albums of 10, 10 and 3, every byte in order", async () => {
    const contents = Array.from({ length: 23 }, () => randomBytes(500));
    const items = await Promise.all(contents.map((bytes, i) => item("photo", `p${i}.jpg`, bytes)));
    const report = await deliver("album", items);
    expect(report.outcomes.map((o) => o.status)).toEqual(contents.map(() => "delivered"));
    const albums = fake.callsTo("sendMediaGroup");
    expect(albums.map((c) => c.files.length)).toEqual([10, 10, 3]);
    const captions = albums.map((c) =>
      (c.params.media as { caption?: string }[]).map((m) => m.caption),
    );
    expect(captions[0]).toEqual(["album", ...Array(9).fill(undefined)]);
    expect(
      captions
        .slice(1)
        .flat()
        .every((caption) => caption === undefined),
    ).toBe(true);
    const arrived = uploads(albums);
    expect(arrived.map((f) => f.filename)).toEqual(contents.map((_, i) => `p${i}.jpg`));
    expect(arrived.every((f, i) => f.bytes.equals(contents[i] as Buffer))).toBe(true);
    for (const album of albums) expect(album.params.message_thread_id).toBe("77");
  });

  it("sends an 11th photo alone with sendPhoto, and other kinds in plan order", async () => {
    const items = [
      await item("document", "notes.txt"),
      ...(await Promise.all(Array.from({ length: 11 }, (_, i) => item("photo", `p${i}.png`)))),
      await item("audio", "song.mp3"),
    ];
    const report = await deliver("", items);
    expect(report.outcomes).toHaveLength(13);
    expect(report.outcomes.every((o) => o.status === "delivered")).toBe(true);
    const order = fake.calls
      .filter((c) => c.method.startsWith("send"))
      .map((c) => `${c.method}:${c.files.length}`);
    expect(order).toEqual(["sendDocument:1", "sendMediaGroup:10", "sendPhoto:1", "sendAudio:1"]);
  });

  it("sends a text over 1024 units as messages first and the media without a caption", async () => {
    const text = `${"long line of explanation ".repeat(80)}`.trim(); // ~2000 units
    await deliver(text, [await item("document", "report.pdf")]);
    const sends = fake.calls.filter((c) => c.method.startsWith("send"));
    expect(sends.map((c) => c.method)).toEqual(["sendMessage", "sendDocument"]);
    expect(sends[0]?.params.text).toBe(text);
    expect(sends[1]?.params.caption).toBeUndefined();
  });

  it("resends a photo Telegram refuses (dimensions) as a document with the same bytes", async () => {
    fake.rejectPhotos((file) => file.filename === "panorama.png");
    const bytes = randomBytes(4000);
    const report = await deliver("wide", [await item("photo", "panorama.png", bytes)]);
    expect(report.outcomes).toEqual([
      { status: "delivered", path: "/workspace/panorama.png", kind: "document" },
    ]);
    expect(fake.callsTo("sendPhoto").map((c) => c.description)).toEqual([
      "Bad Request: PHOTO_INVALID_DIMENSIONS",
    ]);
    const [doc] = fake.callsTo("sendDocument");
    expect(doc?.params.caption).toBe("wide");
    expect(doc?.files[0]?.bytes.equals(bytes)).toBe(true);
  });

  it("sends an album with a refused photo one by one, only that one as a document", async () => {
    fake.rejectPhotos((file) => file.filename === "bad.png");
    const items = [
      await item("photo", "bad.png"),
      await item("photo", "ok1.png"),
      await item("photo", "ok2.png"),
    ];
    const report = await deliver("three", items);
    expect(report.outcomes.map((o) => (o.status === "delivered" ? o.kind : o.status))).toEqual([
      "document",
      "photo",
      "photo",
    ]);
    expect(fake.callsTo("sendMediaGroup").map((c) => c.ok)).toEqual([false]);
    const ok = fake.calls.filter((c) => c.ok && c.method.startsWith("send"));
    expect(ok.map((c) => [c.method, c.files[0]?.filename, c.params.caption])).toEqual([
      ["sendDocument", "bad.png", "three"],
      ["sendPhoto", "ok1.png", undefined],
      ["sendPhoto", "ok2.png", undefined],
    ]);
  });

  it("still sends the text when the media that carried it as caption fails", async () => {
    fake.failNext("sendVideo", {
      kind: "error",
      status: 400,
      description: "Bad Request: wrong file",
    });
    const report = await deliver("see video", [
      await item("video", "clip.mp4"),
      await item("document", "b.txt"),
    ]);
    expect(report.outcomes.map((o) => o.status)).toEqual(["upload_failed", "delivered"]);
    expect(report.outcomes[0]).toMatchObject({ error: expect.stringContaining("wrong file") });
    const delivered = fake.calls.filter((c) => c.ok && c.method.startsWith("send"));
    expect(delivered.map((c) => c.method)).toEqual(["sendMessage", "sendDocument"]);
    expect(delivered[0]?.params.text).toBe("see video");
  });

  it("replies to the user's message once, with the first message only", async () => {
    await deliver("hi", [await item("document", "a.txt"), await item("document", "b.txt")], {
      ...topic,
      replyToMessageId: "31",
    });
    const docs = fake.callsTo("sendDocument");
    expect(docs[0]?.params.reply_parameters).toEqual({
      message_id: 31,
      allow_sending_without_reply: true,
    });
    expect(docs[1]?.params.reply_parameters).toBeUndefined();
  });

  it("delivers what the real media planner resolved from a slot directory", async () => {
    const slot = join(scratch.dir, "slot");
    await mkdir(join(slot, "workspace", "out"), { recursive: true });
    await mkdir(join(slot, "home"), { recursive: true });
    const png = tinyPng();
    const pdf = Buffer.concat([
      Buffer.from("%PDF-1.4\n"),
      randomBytes(2000),
      Buffer.from("\n%%EOF\n"),
    ]);
    await writeFile(join(slot, "workspace", "out", "chart.png"), png);
    await writeFile(join(slot, "workspace", "out", "final report.pdf"), pdf);
    const reply = 'Done.\nMEDIA:/workspace/out/chart.png\nMEDIA:"/workspace/out/final report.pdf"';
    const plan = await planMedia(
      reply,
      {
        backend: "docker",
        slotDirs: [slot],
        volumes: [],
        allowDirs: [],
        protectedHomes: [],
        tmpDir: scratch.dir,
      },
      channel.limits,
    );
    disposers.push(() => plan.dispose());
    expect(plan.ready().map((r) => r.kind)).toEqual(["photo", "document"]);
    const report = await channel.deliver({
      sessionKey: "agent:work:telegram:dm:1",
      profile: "work",
      target: { platform: "telegram", chatId: "1" },
      text: plan.text,
      plan,
    });
    expect(report.outcomes.map((o) => o.status)).toEqual(["delivered", "delivered"]);
    const [photo] = fake.callsTo("sendPhoto");
    const [doc] = fake.callsTo("sendDocument");
    expect(photo?.params.caption).toBe("Done.");
    expect(photo?.files[0]?.bytes.equals(png)).toBe(true);
    expect(doc?.files[0]?.filename).toBe("final report.pdf");
    expect(doc?.files[0]?.bytes.equals(pdf)).toBe(true);
  });

  it("uses the configured upload limits (local Bot API server)", () => {
    const local = new TelegramChannel({
      token: fake.token,
      profile: "work",
      logger: captureLogs().logger,
      limits: { photoBytes: 20_000_000, otherBytes: 2_000_000_000 },
    });
    expect(local.limits.maxBytes("photo")).toBe(20_000_000);
    expect(local.limits.maxBytes("video")).toBe(2_000_000_000);
    expect(channel.limits.maxBytes("photo")).toBe(10_000_000);
    expect(channel.limits.maxBytes("document")).toBe(50_000_000);
  });
});
