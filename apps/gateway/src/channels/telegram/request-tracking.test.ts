import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { Api, HttpError, InputFile } from "grammy";
import { afterEach, describe, expect, it } from "vitest";
import { LocalServers } from "../../../test/local-servers.js";
import { AttemptError, classifyTelegramError, mayHaveArrived } from "./errors.js";
import { RequestProgress, trackingFetch, trackRequest } from "./request-tracking.js";

const token = "123:secret-token";
const sent = { message_id: 7, date: 1, chat: { id: 42, type: "private" }, text: "hi" };

const servers = new LocalServers();
afterEach(() => servers.closeAll());
const serve = servers.serve.bind(servers);

function answer(res: ServerResponse, body: unknown): void {
  res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(body));
}

function apiAt(apiRoot: string): Api {
  return new Api(token, { apiRoot, fetch: trackingFetch() as unknown as typeof fetch });
}

/** A call made inside `trackRequest`, with what it saw of the request, and its error if any. */
async function tracked<T>(call: () => Promise<T>) {
  const progress = new RequestProgress();
  try {
    const result = await trackRequest(progress, call);
    return { progress, result, error: undefined };
  } catch (error) {
    return { progress, result: undefined, error: new AttemptError(error, progress.knownNotSent) };
  }
}

/** An upload body of `bytes` bytes, produced a chunk at a time as the socket takes it. */
function bigFile(bytes: number): InputFile {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  let left = bytes;
  const stream = new Readable({
    read() {
      if (left <= 0) return void this.push(null);
      const size = Math.min(chunk.length, left);
      left -= size;
      this.push(chunk.subarray(0, size));
    },
  });
  return new InputFile(stream, "big.bin");
}

describe("grammY's fetch over undici (request tracking)", () => {
  it("answers a JSON call, and marks it created and its body written", async () => {
    let body = "";
    const root = await serve((req, res) => {
      req.setEncoding("utf8");
      req.on("data", (text: string) => {
        body += text;
      });
      req.on("end", () => answer(res, { ok: true, result: sent }));
    });
    const { progress, result } = await tracked(() => apiAt(root).sendMessage(42, "hi"));
    expect(result?.message_id).toBe(7);
    expect(JSON.parse(body)).toEqual({ chat_id: 42, text: "hi" });
    expect(progress).toMatchObject({ created: true, bodyWritten: true, knownNotSent: false });
  });

  it("turns a Bot API error answer into grammY's error, as the platform's fetch did", async () => {
    const root = await serve((req, res) => {
      req.resume();
      req.on("end", () => {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ ok: false, error_code: 400, description: "Bad Request: no" }));
      });
    });
    await expect(apiAt(root).sendMessage(42, "hi")).rejects.toMatchObject({
      name: "GrammyError",
      error_code: 400,
      description: "Bad Request: no",
    });
  });

  it("counts a connection lost after the whole body as maybe arrived", async () => {
    const root = await serve((req, res) => {
      req.resume();
      req.on("end", () => res.socket?.destroy());
    });
    const { progress, error } = await tracked(() => apiAt(root).sendMessage(42, "hi"));
    expect(error?.error).toBeInstanceOf(HttpError);
    expect(progress).toMatchObject({ created: true, bodyWritten: true });
    expect(mayHaveArrived(error)).toBe(true);
    expect(classifyTelegramError(error, "at-most-once")).toEqual({ retry: false });
  });

  it("counts an upload cut off halfway as known not sent, so it is retried", async () => {
    const size = 8 * 1024 * 1024;
    let received = 0;
    const root = await serve((req) => {
      req.on("data", (chunk: Buffer) => {
        received += chunk.length;
        // Telegram (or a proxy) drops the connection in the middle of the upload.
        if (received > 256 * 1024) req.socket.destroy();
      });
    });
    const { progress, error } = await tracked(() => apiAt(root).sendDocument(42, bigFile(size)));
    expect(error?.error).toBeInstanceOf(HttpError);
    expect(received).toBeLessThan(size);
    expect(progress).toMatchObject({ created: true, bodyWritten: false, knownNotSent: true });
    expect(mayHaveArrived(error)).toBe(false);
    expect(classifyTelegramError(error, "at-most-once")).toEqual({ retry: true });
  });

  it("sends a whole upload and marks its body written", async () => {
    const size = 3 * 1024 * 1024;
    let received = 0;
    const root = await serve((req, res) => {
      req.on("data", (chunk: Buffer) => {
        received += chunk.length;
      });
      req.on("end", () => answer(res, { ok: true, result: { ...sent, text: undefined } }));
    });
    const { progress, result } = await tracked(() => apiAt(root).sendDocument(42, bigFile(size)));
    expect(result?.message_id).toBe(7);
    expect(received).toBeGreaterThan(size);
    expect(progress).toMatchObject({ created: true, bodyWritten: true, knownNotSent: false });
  });

  it("reports a refused connection by its code, as not sent", async () => {
    const root = await serve(() => {});
    await servers.closeAll();
    const { progress, error } = await tracked(() => apiAt(root).sendMessage(42, "hi"));
    const original = error?.error as HttpError;
    expect(original).toBeInstanceOf(HttpError);
    expect((original.error as { code?: string }).code).toBe("ECONNREFUSED");
    expect(progress.knownNotSent).toBe(true);
    expect(classifyTelegramError(error, "at-most-once")).toEqual({ retry: true });
    expect(`${original.message} ${String(original.error)}`).not.toContain("secret-token");
  });

  it("ties a call's progress to its own request only, not to one made after an await", async () => {
    const root = await serve((req, res) => {
      req.resume();
      req.on("end", () => answer(res, { ok: true, result: sent }));
    });
    const api = apiAt(root);
    // A call that waits before its request: the hand-off has ended by then (maybe sent, the
    // safe side), and the progress is never given to the request another call makes meanwhile.
    const late = new RequestProgress();
    const lateCall = trackRequest(late, async () => {
      await new Promise((resolve) => setImmediate(resolve));
      return api.sendMessage(42, "late");
    });
    const own = await tracked(() => api.sendMessage(42, "own"));
    const untracked = api.sendMessage(42, "outside");
    await Promise.all([lateCall, untracked]);
    expect(own.progress).toMatchObject({ created: true, bodyWritten: true });
    expect(late).toMatchObject({ created: false, bodyWritten: false, knownNotSent: false });
  });

  it("answers a call made outside trackRequest (polling, reactions)", async () => {
    const root = await serve((req, res) => {
      req.resume();
      req.on("end", () => answer(res, { ok: true, result: true }));
    });
    await expect(apiAt(root).setMessageReaction(42, 7, [])).resolves.toBe(true);
  });
});
