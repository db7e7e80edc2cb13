import { randomBytes } from "node:crypto";
import { readFile } from "node:fs/promises";
import { isAbsolute } from "node:path";
import { Bot } from "grammy";
import type { Message } from "grammy/types";
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../../../test-support/wait.js";
import { PublicDownloadMaxBytes } from "./files.js";
import { FakeTelegram } from "./server.js";

let fake: FakeTelegram | undefined;

async function started(options: ConstructorParameters<typeof FakeTelegram>[0] = {}) {
  fake = new FakeTelegram(options);
  const { apiRoot } = await fake.start();
  return { fake, apiRoot, bot: new Bot(fake.token, { client: { apiRoot } }) };
}

afterEach(async () => {
  await fake?.stop();
  fake = undefined;
});

/** The message of the only update waiting, as grammY's getUpdates hands it over. */
async function onlyMessage(bot: Bot): Promise<Message> {
  const [update] = await bot.api.getUpdates({ timeout: 0 });
  if (update?.message === undefined) throw new Error("no message queued");
  return update.message;
}

describe("FakeTelegram files users send (getFile and the download route)", () => {
  it("serves a sent document's bytes through getFile and /file/bot<token>/<file_path>", async () => {
    const { fake, apiRoot, bot } = await started();
    const bytes = randomBytes(70_000);
    fake.sendMedia({
      kind: "document",
      bytes,
      fileName: "report.pdf",
      mimeType: "application/pdf",
    });
    const message = await onlyMessage(bot);
    expect(message.document).toMatchObject({
      file_name: "report.pdf",
      mime_type: "application/pdf",
      file_size: bytes.length,
    });
    const file = await bot.api.getFile(message.document!.file_id);
    expect(file).toMatchObject({
      file_id: message.document!.file_id,
      file_size: bytes.length,
      file_path: expect.stringMatching(/^documents\/file_\d+\.pdf$/),
    });
    const response = await fetch(`${apiRoot}/file/bot${fake.token}/${file.file_path}`);
    expect(response.status).toBe(200);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
    expect(fake.downloads).toEqual([
      { filePath: file.file_path, tokenOk: true, status: 200, bytes: bytes.length },
    ]);
    expect(fake.callsTo("getFile")).toHaveLength(1);
  });

  it("refuses a download with another token and records it", async () => {
    const { fake, apiRoot, bot } = await started();
    fake.sendMedia({ kind: "voice", bytes: Buffer.from("OggS voice") });
    const message = await onlyMessage(bot);
    const file = await bot.api.getFile(message.voice!.file_id);
    const response = await fetch(`${apiRoot}/file/bot999:wrong/${file.file_path}`);
    expect(response.status).toBe(401);
    expect(fake.downloads).toEqual([
      { filePath: file.file_path, tokenOk: false, status: 401, bytes: 0 },
    ]);
  });

  it("holds a download after some bytes until the client leaves, then records it cut off", async () => {
    const { fake, apiRoot, bot } = await started();
    fake.sendMedia({ kind: "document", bytes: randomBytes(4000), fileName: "held.bin" });
    const message = await onlyMessage(bot);
    const file = await bot.api.getFile(message.document!.file_id);
    fake.holdDownloads(1500);
    const leave = new AbortController();
    const response = await fetch(`${apiRoot}/file/bot${fake.token}/${file.file_path}`, {
      signal: leave.signal,
    });
    const reader = response.body!.getReader();
    let received = 0;
    while (received < 1500) received += (await reader.read()).value?.length ?? 0;
    expect(received).toBe(1500);
    expect(fake.downloads).toEqual([]);
    leave.abort();
    await waitFor(() =>
      expect(fake.downloads).toEqual([
        { filePath: file.file_path, tokenOk: true, status: 200, bytes: 1500, cutOff: true },
      ]),
    );
  });

  it("answers 400 'file is too big' for a file over 20 MiB, as the public Bot API does", async () => {
    const { fake, bot } = await started();
    fake.sendMedia({ kind: "video", fileSize: PublicDownloadMaxBytes + 1, fileName: "big.mp4" });
    const message = await onlyMessage(bot);
    expect(message.video?.file_size).toBe(PublicDownloadMaxBytes + 1);
    await expect(bot.api.getFile(message.video!.file_id)).rejects.toMatchObject({
      error_code: 400,
      description: "Bad Request: file is too big",
    });
    await expect(bot.api.getFile("no-such-file")).rejects.toMatchObject({ error_code: 400 });
  });

  it("serves a file over 20 MiB on the file route when the test raises downloadMaxBytes", async () => {
    const { fake, apiRoot, bot } = await started({ downloadMaxBytes: PublicDownloadMaxBytes + 2 });
    const bytes = randomBytes(1000);
    fake.sendMedia({ kind: "document", bytes, fileSize: PublicDownloadMaxBytes + 1 });
    const message = await onlyMessage(bot);
    const file = await bot.api.getFile(message.document!.file_id);
    const response = await fetch(`${apiRoot}/file/bot${fake.token}/${file.file_path}`);
    expect(Buffer.from(await response.arrayBuffer()).equals(bytes)).toBe(true);
  });

  it("in localFiles mode answers an absolute path holding the bytes, with no 20 MiB limit", async () => {
    const { fake, bot } = await started({ localFiles: true });
    const bytes = randomBytes(1000);
    fake.sendMedia({ kind: "audio", bytes, fileSize: PublicDownloadMaxBytes + 1 });
    const message = await onlyMessage(bot);
    const file = await bot.api.getFile(message.audio!.file_id);
    expect(isAbsolute(file.file_path!)).toBe(true);
    expect(file.file_path).toContain(fake.token);
    expect((await readFile(file.file_path!)).equals(bytes)).toBe(true);
  });

  it("sends a photo as several sizes, smallest first, the largest being the sent bytes", async () => {
    const { fake, bot } = await started();
    const bytes = randomBytes(5000);
    const { sent } = fake.sendMedia({ kind: "photo", bytes, caption: "/run@x now" });
    const message = await onlyMessage(bot);
    expect(message.photo?.map((size) => size.file_id)).toEqual([
      ...sent.thumbnails.map((t) => t.fileId),
      sent.file.fileId,
    ]);
    const widths = message.photo!.map((size) => size.width);
    expect(widths).toEqual([...widths].sort((a, b) => a - b));
    expect(message.caption).toBe("/run@x now");
    expect(message.caption_entities).toEqual([{ type: "bot_command", offset: 0, length: 6 }]);
  });

  it("gives each kind its own field, and an animation its document twin", async () => {
    const { fake, bot } = await started();
    const kinds = ["audio", "voice", "video", "video_note", "animation", "document"] as const;
    for (const kind of kinds) fake.sendMedia({ kind, bytes: Buffer.from(kind) });
    const updates = await bot.api.getUpdates({ timeout: 0 });
    const fields = updates.map((u) =>
      Object.keys(u.message ?? {})
        .filter((key) => [...kinds, "photo"].includes(key as never))
        .sort(),
    );
    expect(fields).toEqual([
      ["audio"],
      ["voice"],
      ["video"],
      ["video_note"],
      ["animation", "document"],
      ["document"],
    ]);
  });

  it("queues an album as consecutive updates sharing one media_group_id, caption on the first", async () => {
    const { fake, bot } = await started();
    fake.sendAlbum(
      [
        { kind: "photo", bytes: Buffer.from("one") },
        { kind: "photo", bytes: Buffer.from("two") },
        { kind: "video", bytes: Buffer.from("three") },
      ],
      "the trip",
    );
    const updates = await bot.api.getUpdates({ timeout: 0 });
    const ids = updates.map((u) => u.update_id);
    expect(ids).toEqual([ids[0], ids[0]! + 1, ids[0]! + 2]);
    const groups = new Set(updates.map((u) => u.message?.media_group_id));
    expect(groups.size).toBe(1);
    expect([...groups][0]).toEqual(expect.any(String));
    expect(updates.map((u) => u.message?.caption)).toEqual(["the trip", undefined, undefined]);
  });
});
