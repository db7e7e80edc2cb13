import { createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AttachmentFetchError } from "../types.js";
import { DiscordAttachmentFetcher } from "./attachments.js";

const servers: Server[] = [];
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** A TCP server that writes `answer` once a request arrived, then holds the connection. */
async function holding(answer: string): Promise<string> {
  const server = createServer((socket) => {
    sockets.push(socket);
    socket.on("error", () => undefined);
    socket.once("data", () => socket.write(answer));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("no port");
  return `http://127.0.0.1:${address.port}`;
}

async function drain(chunks: AsyncIterable<Uint8Array>): Promise<number> {
  let size = 0;
  for await (const chunk of chunks) size += chunk.length;
  return size;
}

describe("DiscordAttachmentFetcher", () => {
  it("gives up a body that stops sending after its head, with a reason the chat can show", async () => {
    // A CDN (or anything on apiRoot's origin) that announces 100 bytes, sends 4 and goes
    // silent: without a bound the session's queue waits on it for ever.
    const root = await holding("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nsome");
    const fetcher = new DiscordAttachmentFetcher({
      apiRoot: root,
      maxBytes: 1000,
      stallTimeoutMs: 50,
    });
    const chunks = await fetcher.open(
      { name: "a.bin", sentAs: "file", size: 100, mime: undefined, ref: `${root}/a.bin` },
      new AbortController().signal,
    );
    const error = await drain(chunks).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(AttachmentFetchError);
    expect((error as Error).message).toBe("the download broke off: nothing arrived for 50 ms");
  });
});
