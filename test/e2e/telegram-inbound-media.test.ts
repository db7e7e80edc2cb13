import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MediaInput } from "../fakes/telegram/index.js";
import { type TelegramBot, TelegramGatewayHarness } from "./harness/telegram-gateway.js";

const Admin = 2001;
const Stranger = 2999;
/** Profile 0's `telegram.downloadMaxBytes`: small, so limits are crossed cheaply. */
const LimitBytes = 200_000;

const sha = (bytes: Buffer): string => createHash("sha256").update(bytes).digest("hex");

/** An Ogg page with an Opus head: what a Telegram voice note starts with. */
function opusVoice(): Buffer {
  const body = Buffer.from("OpusHead\x01\x01\x38\x01\x80\xbb\x00\x00\x00\x00\x00", "latin1");
  const header = Buffer.alloc(28);
  header.write("OggS", 0, "latin1");
  header[5] = 0x02;
  header[26] = 1;
  header[27] = body.length;
  return Buffer.concat([header, body, randomBytes(2000)]);
}

/** Prints each attachment's path, one `P:<path>` line each. */
const PrintPaths = 'for f in $MEDIAGATE_ATTACHMENTS; do echo "P:$f"; done';
const HashAll = 'for f in $MEDIAGATE_ATTACHMENTS; do sha256sum "$f"; done';

/**
 * Files users send on Telegram reaching the sandbox: the whole gateway (config → channel
 * factory → TelegramChannel and grammY against FakeTelegram's getFile and file route → the
 * journal → saveAttachments → the shell agent in a real Docker sandbox). docs/inbound-media.md.
 */
describe("gateway over Telegram: files users send", () => {
  let harness: TelegramGatewayHarness;
  let bot: TelegramBot;

  beforeAll(async () => {
    harness = await TelegramGatewayHarness.start("t-inbound", [
      { admins: [Admin], telegram: { downloadMaxBytes: LimitBytes } },
      { admins: [Admin], sandbox: { filesystem: "tmpfs" } },
      { admins: [Admin], fake: { localFiles: true }, telegram: { localFiles: true } },
    ]);
    bot = harness.bot(0);
  });

  afterAll(async () => {
    await harness?.close();
  });

  /** Sends `input` from the admin, waits until it is handled, answers the chat's new text. */
  async function send(target: TelegramBot, input: Omit<MediaInput, "userId">): Promise<string> {
    const since = target.mark();
    await target.handle((fake) => fake.sendMedia({ userId: Admin, ...input }).update);
    return target.texts(Admin, since).join("\n");
  }

  /** The names in the profile's inbox, as root in its container sees them (`ls -A`). */
  async function inbox(target: TelegramBot): Promise<string[]> {
    const listed = await harness.docker.exec(await target.runningContainer(), [
      "sh",
      "-c",
      "ls -A /workspace/inbox 2>/dev/null",
    ]);
    return listed.stdout.split("\n").filter((line) => line !== "");
  }

  it("saves a document byte for byte: sha256sum in the container equals the sent bytes'", async () => {
    const bytes = randomBytes(150_000);
    const reply = await send(bot, {
      kind: "document",
      bytes,
      fileName: "data.bin",
      mimeType: "application/octet-stream",
      caption: "sha256sum $MEDIAGATE_ATTACHMENTS",
    });
    expect(reply).toBe(`${sha(bytes)}  /workspace/inbox/data.bin`);
    expect(bot.fake.downloads.filter((d) => d.status === 200).map((d) => d.bytes)).toContain(
      bytes.length,
    );
  });

  it("saves a photo's largest size, named photo.jpg", async () => {
    const largest = randomBytes(20_000);
    const thumbnails = [randomBytes(300), randomBytes(3000)];
    const reply = await send(bot, { kind: "photo", bytes: largest, thumbnails, caption: HashAll });
    expect(reply).toMatch(new RegExp(`^${sha(largest)}  /workspace/inbox/photo(-\\d+)?\\.jpg$`));
  });

  it("lists a voice note sent without a command as kind voice, running nothing", async () => {
    const voice = opusVoice();
    const reply = await send(bot, { kind: "voice", bytes: voice });
    expect(reply).toMatch(/^\/workspace\/inbox\/voice(-\d+)?\.ogg \(voice, [^)]+\)$/);
  });

  it("makes an album of three one turn with three paths, its caption the command", async () => {
    const files = [randomBytes(1000), randomBytes(2000), randomBytes(3000)];
    const since = bot.mark();
    await bot.handle(
      (fake) =>
        fake.sendAlbum(
          [
            { kind: "photo", bytes: files[0], userId: Admin },
            { kind: "document", bytes: files[1], fileName: "notes.txt", userId: Admin },
            { kind: "video", bytes: files[2], userId: Admin },
          ],
          HashAll,
        ).updates[0]!,
    );
    const replies = bot.texts(Admin, since);
    expect(replies).toHaveLength(1);
    const lines = replies[0]!.split("\n");
    expect(lines.map((line) => line.split("  ")[0])).toEqual(files.map(sha));
    expect(lines.map((line) => line.split("  ")[1])).toEqual([
      expect.stringMatching(/^\/workspace\/inbox\/photo(-\d+)?\.jpg$/),
      "/workspace/inbox/notes.txt",
      expect.stringMatching(/^\/workspace\/inbox\/video(-\d+)?\.mp4$/),
    ]);
  });

  it("refuses a file declared over the limit with a notice naming it, without asking Telegram for it", async () => {
    const before = await inbox(bot);
    const getFiles = bot.fake.callsTo("getFile").length;
    const reply = await send(bot, {
      kind: "document",
      fileSize: LimitBytes + 1,
      bytes: randomBytes(LimitBytes + 1),
      fileName: "huge.bin",
    });
    expect(reply).toContain("“huge.bin” was not saved");
    expect(reply).toContain("limit");
    expect(bot.fake.callsTo("getFile")).toHaveLength(getFiles);
    expect(await inbox(bot)).toEqual(before);
  });

  it("cuts off a file larger than it was declared at the limit and leaves nothing behind", async () => {
    const before = await inbox(bot);
    const downloads = bot.fake.downloads.length;
    const reply = await send(bot, {
      kind: "document",
      fileSize: 1000,
      bytes: randomBytes(LimitBytes * 3),
      fileName: "liar.bin",
      caption: "echo ran",
    });
    expect(reply).toContain("“liar.bin” was not saved");
    expect(reply).toContain("ran"); // the rest of the message is still handled
    expect(bot.fake.downloads.length).toBe(downloads + 1);
    expect(await inbox(bot)).toEqual(before);
  });

  it("refuses a download cut short of its file_size with a notice, leaving nothing behind", async () => {
    const before = await inbox(bot);
    bot.fake.endDownloadsAfter(10_000); // a clean close and no Content-Length
    try {
      const reply = await send(bot, {
        kind: "document",
        bytes: randomBytes(40_000),
        fileName: "cut.bin",
        caption: "echo ran",
      });
      expect(reply).toContain(
        "📎 “cut.bin” could not be downloaded (only 10000 of the 40000 bytes Telegram announced arrived). Send it again.",
      );
      expect(reply).toContain("ran");
    } finally {
      bot.fake.endDownloadsAfter(undefined);
    }
    expect(await inbox(bot)).toEqual(before);
  });

  it("lands hostile names sanitized inside /workspace/inbox", async () => {
    const hostile = ["../../x", ";rm -rf ~;.txt", `${"n".repeat(296)}.txt`, "\u202Etxt.exe"];
    const since = bot.mark();
    await bot.handle(
      (fake) =>
        fake.sendAlbum(
          hostile.map((fileName) => ({
            kind: "document" as const,
            bytes: Buffer.from(fileName),
            fileName,
            userId: Admin,
          })),
          `${PrintPaths}; test -e /workspace/x && echo ESCAPED; cat $MEDIAGATE_ATTACHMENTS | wc -c`,
        ).updates[0]!,
    );
    const reply = bot.texts(Admin, since).join("\n");
    const paths = reply
      .split("\n")
      .filter((line) => line.startsWith("P:"))
      .map((line) => line.slice(2));
    expect(paths).toHaveLength(4);
    for (const path of paths) {
      expect(path).toMatch(/^\/workspace\/inbox\/[^/]+$/);
      const name = path.slice("/workspace/inbox/".length);
      expect(name).not.toMatch(/[;~\s\u202E]|^[.-]/);
      expect(Buffer.byteLength(name)).toBeLessThanOrEqual(100);
    }
    expect(paths[0]).toBe("/workspace/inbox/x");
    expect(paths[2]).toMatch(/\.txt$/);
    expect(reply).not.toContain("ESCAPED");
    expect(reply.split("\n").at(-1)?.trim()).toBe(
      String(hostile.reduce((sum, name) => sum + Buffer.byteLength(name), 0)),
    );
  });

  it("never fetches a file a stranger sends: no getFile, no download", async () => {
    const getFiles = bot.fake.callsTo("getFile").length;
    const downloads = bot.fake.downloads.length;
    const since = bot.mark();
    await bot.handle(
      (fake) =>
        fake.sendMedia({
          kind: "document",
          bytes: randomBytes(500),
          fileName: "intruder.sh",
          caption: "sh $MEDIAGATE_ATTACHMENTS",
          userId: Stranger,
        }).update,
    );
    expect(bot.texts(Stranger, since).join("\n")).toContain("not allowed");
    expect(bot.fake.callsTo("getFile")).toHaveLength(getFiles);
    expect(bot.fake.downloads).toHaveLength(downloads);
  });

  it("saves into a tmpfs slot through the engine's archive API", async () => {
    const tmpfs = harness.bot(1);
    const bytes = randomBytes(60_000);
    const reply = await send(tmpfs, {
      kind: "document",
      bytes,
      fileName: "in-memory.bin",
      caption: "sha256sum $MEDIAGATE_ATTACHMENTS; grep ' /workspace ' /proc/mounts | cut -d' ' -f3",
    });
    expect(reply).toBe(`${sha(bytes)}  /workspace/inbox/in-memory.bin\ntmpfs`);
  });

  it("reads a local Bot API server's file from disk (localFiles), downloading nothing", async () => {
    const local = harness.bot(2);
    const bytes = randomBytes(80_000);
    const reply = await send(local, {
      kind: "audio",
      bytes,
      fileName: "talk.mp3",
      caption: "sha256sum $MEDIAGATE_ATTACHMENTS",
    });
    expect(reply).toBe(`${sha(bytes)}  /workspace/inbox/talk.mp3`);
    expect(local.fake.callsTo("getFile")).toHaveLength(1);
    expect(local.fake.downloads).toEqual([]);
  });

  it("keeps every bot token out of the gateway's log", () => {
    const log = harness.logs.join("");
    expect(log).toContain("inbound files");
    for (const secret of harness.secrets) expect(log).not.toContain(secret);
    expect(log).not.toContain("/file/bot");
  });
});
