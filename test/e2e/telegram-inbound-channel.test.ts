import { createHash, randomBytes } from "node:crypto";
import { rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { InboundMessage } from "@mediagate/gateway";
import { TelegramChannel } from "@mediagate/gateway";
import { afterEach, describe, expect, it } from "vitest";
import { Fifos } from "../../test-support/fifo.js";
import { waitFor } from "../../test-support/wait.js";
import { botMethod, FaultProxy } from "../fakes/fault-proxy/index.js";
import { FakeTelegram, PublicDownloadMaxBytes } from "../fakes/telegram/index.js";
import { captureLogs } from "../fakes/telegram/media-fixtures.js";

/**
 * The Telegram channel's inbound media against the fake Bot API with the real grammY: albums
 * merged in the polling loop (and completed by one more poll), files fetched by getFile and
 * the file route or a local server's disk, errors and logs free of the token.
 */

type InboundAttachment = NonNullable<InboundMessage["attachments"]>[number];

const AlbumWaitMs = 777;
let fake: FakeTelegram | undefined;
let channel: TelegramChannel | undefined;
let logs: ReturnType<typeof captureLogs>;

const servers: Server[] = [];

const fifos = new Fifos();

afterEach(async () => {
  fifos.release();
  await channel?.stop();
  channel = undefined;
  await fake?.stop();
  fake = undefined;
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

/** A server on another port of 127.0.0.1 that records every request: not the Bot API. */
async function elsewhere(): Promise<{ port: number; asked: string[] }> {
  const asked: string[] = [];
  const server = createServer((req, res) => {
    asked.push(req.url ?? "");
    res.end("not Telegram's");
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return { port: address.port, asked };
}

async function setUp(
  options: {
    fakeLocalFiles?: boolean;
    localFiles?: boolean;
    downloadMaxBytes?: number;
    /** Also how long a download may send nothing. */
    requestTimeoutBaseMs?: number;
    /** Called for every wait the poller makes; the album wait included. */
    onSleep?: (ms: number) => void;
    /** Answer every group message, not only those addressed to the bot. */
    everyGroupMessage?: boolean;
  } = {},
): Promise<{ fake: FakeTelegram; channel: TelegramChannel }> {
  fake = new FakeTelegram({ localFiles: options.fakeLocalFiles ?? false });
  const { apiRoot } = await fake.start();
  logs = captureLogs();
  channel = new TelegramChannel({
    token: fake.token,
    apiRoot,
    profile: "work",
    logger: logs.logger,
    retry: { minDelayMs: 5, maxDelayMs: 20 },
    pollBackoffMinMs: 5,
    albumWaitMs: AlbumWaitMs,
    localFiles: options.localFiles,
    downloadMaxBytes: options.downloadMaxBytes,
    requestTimeoutBaseMs: options.requestTimeoutBaseMs,
    ...(options.everyGroupMessage === true ? { groups: { requireMention: false } } : {}),
    sleep: async (ms) => options.onSleep?.(ms),
  });
  return { fake, channel };
}

async function receiving(
  channel: TelegramChannel,
  onMessage: (message: InboundMessage) => Promise<void> = async () => {},
): Promise<InboundMessage[]> {
  const received: InboundMessage[] = [];
  await channel.start({
    onMessage: async (message) => {
      await onMessage(message);
      received.push(message);
    },
    onFatal: () => {},
  });
  return received;
}

async function fetched(channel: TelegramChannel, attachment: InboundAttachment): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of await channel.attachments.open(
    attachment,
    new AbortController().signal,
  ))
    chunks.push(Buffer.from(chunk)); // a chunk is valid only until the next one
  return Buffer.concat(chunks);
}

const sha = (bytes: Buffer) => createHash("sha256").update(bytes).digest("hex");

describe("Telegram albums: one message per media_group_id", () => {
  it("merges an album queued at once into one message with the first update as receipt", async () => {
    const { fake, channel } = await setUp();
    const received = await receiving(channel);
    const { updates } = fake.sendAlbum(
      [
        { kind: "photo", bytes: Buffer.from("one") },
        { kind: "document", bytes: Buffer.from("two"), fileName: "two.txt" },
        { kind: "video", bytes: Buffer.from("three") },
      ],
      "wc -c $MEDIAGATE_ATTACHMENTS",
    );
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({
      receiptId: String(updates[0]!.update_id),
      text: "wc -c $MEDIAGATE_ATTACHMENTS",
    });
    expect(received[0]!.attachments?.map((a) => [a.sentAs, a.name])).toEqual([
      ["photo", "photo.jpg"],
      ["document", "two.txt"],
      ["video", "video.mp4"],
    ]);
  });

  it("asks once more after the album wait when an answer ends inside an album", async () => {
    let rest: (() => void) | undefined;
    const sleeps: number[] = [];
    const { fake, channel } = await setUp({
      onSleep: (ms) => {
        sleeps.push(ms);
        // The album's other messages come in while the poller waits for them.
        rest?.();
        rest = undefined;
      },
    });
    const received = await receiving(channel);
    const group = "13000000000000000042";
    const head = fake.sendMedia({ kind: "photo", bytes: Buffer.from("1"), mediaGroupId: group });
    rest = () => {
      fake?.sendMedia({
        kind: "photo",
        bytes: Buffer.from("2"),
        mediaGroupId: group,
        caption: "x",
      });
      fake?.sendMedia({ kind: "photo", bytes: Buffer.from("3"), mediaGroupId: group });
    };
    await waitFor(() => expect(received).toHaveLength(1));
    expect(sleeps).toEqual([AlbumWaitMs]);
    expect(received[0]!.receiptId).toBe(String(head.update.update_id));
    expect(received[0]!.text).toBe("x");
    expect(received[0]!.attachments).toHaveLength(3);
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    expect(received).toHaveLength(1);
  });

  it("keeps two senders' albums in one group apart: same media_group_id, interleaved", async () => {
    const { fake, channel } = await setUp({ everyGroupMessage: true });
    const received = await receiving(channel);
    const group = "13000000000000000077";
    const item = (userId: number, bytes: string, caption?: string) =>
      fake.sendMedia({
        kind: "photo",
        bytes: Buffer.from(bytes),
        chatId: -100555,
        userId,
        mediaGroupId: group,
        ...(caption === undefined ? {} : { caption }),
      });
    const ada = item(101, "ada 1", "from ada");
    const bob = item(202, "bob 1", "from bob");
    item(101, "ada 2");
    item(202, "bob 2");
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    await waitFor(() => expect(received).toHaveLength(2));
    const byUser = new Map(received.map((m) => [m.userId, m]));
    expect(byUser.get("101")).toMatchObject({
      chatId: "-100555",
      text: "from ada",
      receiptId: String(ada.update.update_id),
    });
    expect(byUser.get("202")).toMatchObject({
      chatId: "-100555",
      text: "from bob",
      receiptId: String(bob.update.update_id),
    });
    const contents = async (message: InboundMessage | undefined) =>
      Promise.all(
        (message?.attachments ?? []).map(async (a) => (await fetched(channel, a)).toString()),
      );
    expect(await contents(byUser.get("101"))).toEqual(["ada 1", "ada 2"]);
    expect(await contents(byUser.get("202"))).toEqual(["bob 1", "bob 2"]);
  });

  it("offers an album that could not be recorded again whole, under the same receipt id", async () => {
    const { fake, channel } = await setUp();
    let refusals = 1;
    const attempts: InboundMessage[] = [];
    const received = await receiving(channel, async (message) => {
      attempts.push(message);
      if (refusals-- > 0) throw new Error("journal disk full");
    });
    fake.sendPrivateText({ text: "before" });
    fake.sendAlbum([
      { kind: "voice", bytes: Buffer.from("a") },
      { kind: "audio", bytes: Buffer.from("b") },
    ]);
    fake.sendPrivateText({ text: "after" });
    await waitFor(() => expect(fake.pendingUpdates).toBe(0));
    expect(attempts.map((m) => [m.text, m.attachments?.length ?? 0])).toEqual([
      ["before", 0],
      ["before", 0],
      ["", 2],
      ["after", 0],
    ]);
    expect(received.map((m) => m.receiptId)).toEqual(
      [...new Set(attempts.map((m) => m.receiptId))].sort((a, b) => Number(a) - Number(b)),
    );
  });
});

describe("Telegram albums after a crash", () => {
  it("offers a recorded but unconfirmed album to the next process whole, under the same receipt id", async () => {
    const fake = new FakeTelegram();
    const { apiRoot } = await fake.start();
    const proxy = new FaultProxy(apiRoot);
    await proxy.start();
    const logs = captureLogs();
    const channelOn = (root: string) =>
      new TelegramChannel({
        token: fake.token,
        apiRoot: root,
        profile: "work",
        logger: logs.logger,
        retry: { minDelayMs: 5, maxDelayMs: 20 },
        albumWaitMs: 1,
        sleep: async () => {},
      });
    try {
      const first = channelOn(proxy.url);
      const before: InboundMessage[] = [];
      await first.start({
        onMessage: async (message) => {
          // Recorded; then the process "dies": no later getUpdates (which would confirm it)
          // reaches Telegram, the confirming one at stop included.
          proxy.add(botMethod("getUpdates"), { kind: "reset", stage: "before" }, 1000);
          before.push(message);
        },
        onFatal: () => {},
      });
      fake.sendAlbum(
        [
          { kind: "photo", bytes: Buffer.from("a") },
          { kind: "photo", bytes: Buffer.from("b") },
          { kind: "photo", bytes: Buffer.from("c") },
        ],
        "caption",
      );
      await waitFor(() => expect(before).toHaveLength(1));
      await first.stop();
      expect(fake.pendingUpdates).toBe(3);

      const second = channelOn(apiRoot);
      const after: InboundMessage[] = [];
      await second.start({ onMessage: async (m) => void after.push(m), onFatal: () => {} });
      try {
        await waitFor(() => expect(fake.pendingUpdates).toBe(0));
      } finally {
        await second.stop();
      }
      expect(after).toEqual(before);
      expect(after[0]?.attachments).toHaveLength(3);
    } finally {
      await proxy.stop();
      await fake.stop();
    }
  });
});

describe("Telegram inbound files: fetching", () => {
  it("streams a document through getFile and the file route, byte for byte", async () => {
    const { fake, channel } = await setUp();
    const received = await receiving(channel);
    const bytes = randomBytes(300_000);
    fake.sendMedia({ kind: "document", bytes, fileName: "data.bin", caption: "sha256sum" });
    await waitFor(() => expect(received).toHaveLength(1));
    const attachment = received[0]!.attachments![0]!;
    expect(attachment).toMatchObject({ name: "data.bin", size: bytes.length, sentAs: "document" });
    expect(sha(await fetched(channel, attachment))).toBe(sha(bytes));
    expect(fake.callsTo("getFile").map((c) => c.params.file_id)).toEqual([attachment.ref]);
    expect(fake.downloads.map((d) => [d.tokenOk, d.status, d.bytes])).toEqual([
      [true, 200, bytes.length],
    ]);
    expect(channel.attachments.maxBytes).toBe(20_000_000);
  });

  it("hands the bytes on as they arrive, never the whole file at once", async () => {
    const { fake, channel } = await setUp({ downloadMaxBytes: 10_000_000 });
    const bytes = randomBytes(4 * 1024 * 1024);
    const file = fake.registerFile({ kind: "document", bytes });
    const stream = await channel.attachments.open(
      { name: "big.bin", sentAs: "document", ref: file.fileId },
      new AbortController().signal,
    );
    const sizes: number[] = [];
    const hash = createHash("sha256");
    for await (const chunk of stream) {
      sizes.push(chunk.length);
      hash.update(chunk);
    }
    expect(hash.digest("hex")).toBe(sha(bytes));
    expect(sizes.length).toBeGreaterThan(4);
    expect(Math.max(...sizes)).toBeLessThan(bytes.length / 4);
  });

  it("fetches a photo's largest size only", async () => {
    const { fake, channel } = await setUp();
    const received = await receiving(channel);
    const bytes = randomBytes(4000);
    const { sent } = fake.sendMedia({ kind: "photo", bytes });
    await waitFor(() => expect(received).toHaveLength(1));
    expect((await fetched(channel, received[0]!.attachments![0]!)).equals(bytes)).toBe(true);
    expect(fake.callsTo("getFile").map((c) => c.params.file_id)).toEqual([sent.file.fileId]);
  });

  it("gives up a download that stalls, closing its connection", async () => {
    const { fake, channel } = await setUp({ requestTimeoutBaseMs: 300 });
    const file = fake.registerFile({ kind: "document", bytes: randomBytes(10_000) });
    fake.holdDownloads(1000);
    const chunks: Uint8Array[] = [];
    const reading = (async () => {
      const stream = await channel.attachments.open(
        { name: "slow.bin", sentAs: "document", ref: file.fileId },
        new AbortController().signal,
      );
      for await (const chunk of stream) chunks.push(chunk);
    })();
    await expect(reading).rejects.toMatchObject({
      name: "AttachmentFetchError",
      reason: "the download broke off: nothing arrived for 300 ms",
    });
    expect(Buffer.concat(chunks).length).toBe(1000);
    await waitFor(() =>
      expect(fake.downloads).toEqual([expect.objectContaining({ bytes: 1000, cutOff: true })]),
    );
  });

  it("stops a download at once when the caller aborts, closing its connection", async () => {
    const { fake, channel } = await setUp();
    const file = fake.registerFile({ kind: "document", bytes: randomBytes(10_000) });
    fake.holdDownloads(500);
    const stop = new AbortController();
    const stream = await channel.attachments.open(
      { name: "stopped.bin", sentAs: "document", ref: file.fileId },
      stop.signal,
    );
    const reading = (async () => {
      for await (const _ of stream) stop.abort(); // the first chunk came: /stop
    })();
    await expect(reading).rejects.toMatchObject({ name: "AttachmentFetchError" });
    await waitFor(() =>
      expect(fake.downloads).toEqual([expect.objectContaining({ bytes: 500, cutOff: true })]),
    );
  });

  it("follows a redirect within the Bot API's origin and refuses one away from it, fetching nothing there", async () => {
    // A short stall bound: without the host check a private address would be waited for.
    const { fake, channel } = await setUp({ requestTimeoutBaseMs: 2000 });
    const other = await elsewhere();
    const bytes = randomBytes(20_000);
    const file = fake.registerFile({ kind: "document", bytes });
    const attachment = { name: "moved.bin", sentAs: "document", ref: file.fileId } as const;
    const fileRoute = `/file/bot${fake.token}/${file.filePath}`;

    fake.redirectNextDownload(fileRoute); // within the root: followed
    expect((await fetched(channel, attachment)).equals(bytes)).toBe(true);

    const root = new URL(fake.apiRoot);
    const targets = [
      `http://127.0.0.1:${other.port}/stolen`,
      `http://localhost:${root.port}${fileRoute}`, // the same server, by another name
      "http://10.0.0.1/x",
      "http://169.254.169.254/latest/meta-data/",
    ];
    const reasons: unknown[] = [];
    for (const location of targets) {
      fake.redirectNextDownload(location);
      reasons.push(
        await fetched(channel, attachment).then(
          () => "fetched",
          (error: unknown) => error,
        ),
      );
    }
    for (const reason of reasons) {
      expect(reason).toMatchObject({
        name: "AttachmentFetchError",
        reason: "the download failed: a redirect led away from Telegram's file hosts",
      });
    }
    expect(other.asked).toEqual([]);
    expect(fake.downloads.map((d) => d.status)).toEqual([302, 200, 302, 302, 302, 302]);
  });

  it("refuses a download that ends cleanly short of the file_size Telegram announced", async () => {
    const { fake, channel } = await setUp();
    const bytes = randomBytes(50_000);
    const file = fake.registerFile({ kind: "document", bytes });
    fake.endDownloadsAfter(20_000); // no Content-Length: HTTP alone cannot tell it is short
    await expect(
      fetched(channel, { name: "short.bin", sentAs: "document", ref: file.fileId }),
    ).rejects.toMatchObject({
      name: "AttachmentFetchError",
      reason: "only 20000 of the 50000 bytes Telegram announced arrived",
    });
    expect(fake.downloads.map((d) => [d.status, d.bytes])).toEqual([[200, 20_000]]);
  });

  it("refuses a local Bot API server's file that is shorter than its file_size", async () => {
    const { fake, channel } = await setUp({ fakeLocalFiles: true, localFiles: true });
    const bytes = randomBytes(5_000);
    const file = fake.registerFile({ kind: "document", bytes, fileSize: 8_000 });
    await expect(
      fetched(channel, { name: "partial.bin", sentAs: "document", ref: file.fileId }),
    ).rejects.toMatchObject({
      name: "AttachmentFetchError",
      reason: "only 5000 of the 8000 bytes Telegram announced arrived",
    });
  });

  it("refuses a file getFile says is over the limit without downloading it", async () => {
    const { fake, channel } = await setUp({ downloadMaxBytes: 1000 });
    const file = fake.registerFile({ kind: "document", bytes: randomBytes(2000) });
    const attachment = { name: "x.bin", sentAs: "document", ref: file.fileId } as const;
    await expect(fetched(channel, attachment)).rejects.toMatchObject({
      name: "AttachmentFetchError",
      reason: expect.stringMatching(/over the .* limit/),
    });
    expect(fake.downloads).toEqual([]);
  });

  it("explains Telegram's 20 MB getFile limit when the configured one is higher", async () => {
    const { fake, channel } = await setUp({ downloadMaxBytes: 100_000_000 });
    const file = fake.registerFile({ kind: "video", fileSize: PublicDownloadMaxBytes + 1 });
    await expect(
      fetched(channel, { name: "big.mp4", sentAs: "video", ref: file.fileId }),
    ).rejects.toMatchObject({
      name: "AttachmentFetchError",
      reason: expect.stringContaining("up to 20 MB"),
    });
    expect(fake.downloads).toEqual([]);
  });

  it("reads a local Bot API server's absolute path from disk (localFiles)", async () => {
    const { fake, channel } = await setUp({ fakeLocalFiles: true, localFiles: true });
    const received = await receiving(channel);
    const bytes = randomBytes(50_000);
    fake.sendMedia({ kind: "audio", bytes, fileSize: bytes.length });
    await waitFor(() => expect(received).toHaveLength(1));
    expect((await fetched(channel, received[0]!.attachments![0]!)).equals(bytes)).toBe(true);
    expect(fake.downloads).toEqual([]);
  });

  it("refuses a local file that became a pipe, without waiting for a writer", async () => {
    const { fake, channel } = await setUp({ fakeLocalFiles: true, localFiles: true });
    const file = fake.registerFile({ kind: "document", bytes: randomBytes(1000) });
    const stream = await channel.attachments.open(
      { name: "piped.bin", sentAs: "document", ref: file.fileId },
      new AbortController().signal,
    ); // getFile wrote the file; it is read from the first chunk on
    const path = fake.localPathOf(file);
    await rm(path);
    fifos.at(path);
    const reading = (async () => {
      for await (const _ of stream);
    })();
    await expect(reading).rejects.toMatchObject({
      name: "AttachmentFetchError",
      reason:
        "the local Bot API server's file is not a regular file (a device, socket or pipe); telegram.localFiles reads regular files only",
    });
  });

  it("refuses a relative file_path in localFiles mode, saying what to change", async () => {
    const { fake, channel } = await setUp({ localFiles: true });
    const file = fake.registerFile({ kind: "document", bytes: Buffer.from("x") });
    await expect(
      fetched(channel, { name: "x", sentAs: "document", ref: file.fileId }),
    ).rejects.toMatchObject({
      name: "AttachmentFetchError",
      reason: expect.stringMatching(/relative file path.*--local/),
    });
  });

  it("never shows the token or the file URL in an error or a log line", async () => {
    const { fake, channel } = await setUp();
    const file = fake.registerFile({ kind: "document", bytes: Buffer.from("x") });
    const errors: unknown[] = [];
    const attempt = async (ref: string) => {
      await fetched(channel, { name: "x", sentAs: "document", ref }).catch((error: unknown) =>
        errors.push(error),
      );
    };
    await attempt("no-such-file"); // getFile 400
    fake.failNext("getFile", {
      kind: "error",
      status: 400,
      description: `Bad Request: ${fake.token}`,
    });
    await attempt(file.fileId); // a description echoing the token
    await fake.stop(); // connection refused on getFile
    await attempt(file.fileId);
    expect(errors).toHaveLength(3);

    // A local server's file gone by the time it is read: fs's error names the path (and so
    // the token, the directory the server keeps the bot's files in).
    const firstLogs = logs.text();
    const local = await setUp({ fakeLocalFiles: true, localFiles: true });
    const gone = local.fake.registerFile({ kind: "document", bytes: Buffer.from("y") });
    const stream = await local.channel.attachments.open(
      { name: "y", sentAs: "document", ref: gone.fileId },
      new AbortController().signal,
    );
    await local.fake.stop(); // removes the local dir: the read fails with the path in fs's error
    await (async () => {
      for await (const _ of stream);
    })().catch((error: unknown) => errors.push(error));
    expect(errors).toHaveLength(4);

    const tokens = [local.fake.token];
    for (const error of errors) {
      expect(error).toMatchObject({ name: "AttachmentFetchError" });
      const shown = `${String(error)} ${JSON.stringify(error)} ${(error as Error).stack ?? ""} ${String((error as Error).cause ?? "")}`;
      expect((error as { reason: string }).reason).not.toMatch(/https?:|\/bot/);
      for (const token of tokens) {
        expect(shown).not.toContain(token);
        expect(shown).not.toContain(`/file/bot`);
      }
    }
    for (const text of [firstLogs, logs.text()]) {
      expect(text).not.toContain(local.fake.token);
      expect(text).not.toContain("/file/bot");
    }
    expect(firstLogs).toContain("getFile"); // the failures were logged, token-free
  });
});
